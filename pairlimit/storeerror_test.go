package pairlimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit/pairstore"
)

var errStoreDown = errors.New("connection refused")

type downStore struct{}

func (downStore) Reserve(context.Context, pairstore.Pair, time.Time, time.Duration, time.Duration) (pairstore.Ticket, bool, error) {
	return pairstore.Ticket{}, false, errStoreDown
}
func (downStore) Next(context.Context, pairstore.Pair, time.Time) (time.Time, error) {
	return time.Time{}, errStoreDown
}
func (downStore) Cancel(context.Context, pairstore.Pair, time.Time, pairstore.Ticket) (bool, error) {
	return false, errStoreDown
}
func (downStore) Refuse(context.Context, pairstore.Pair, time.Time, []time.Duration, time.Duration) (time.Duration, error) {
	return 0, errStoreDown
}
func (downStore) Accept(context.Context, pairstore.Pair, time.Time) error { return errStoreDown }

// TestStoreErrorNamesTheDecision: moved from TestStoreErrorsAreTyped when
// the store error's type was unexported: the error of a failed store names
// the decision. Also the zero storeError's Unwrap (from
// TestZeroValuesNeverPanic).
func TestStoreErrorNamesTheDecision(t *testing.T) {
	lim := New(Meta, WithStore(downStore{}))
	p, err := NewPair("1001", "237690000001")
	if err != nil {
		t.Fatal(err)
	}
	r := lim.ReserveN(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), p, 1)
	var se *storeError
	if !errors.As(r.Err(), &se) || se.Op != "reserve" {
		t.Errorf("not a *storeError: %v", r.Err())
	}
	var zero storeError
	_ = zero.Unwrap()
}
