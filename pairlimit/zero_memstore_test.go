package pairlimit

import (
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit/pairstore"
)

// TestZeroMemoryStoreNeverPanics: moved from TestZeroValuesNeverPanic when
// the memory store's type was unexported. (The zero store panicked on a
// nil clock.)
func TestZeroMemoryStoreNeverPanics(t *testing.T) {
	q, err := NewPair("1001", "237690000001")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var ms memoryStore // the zero value
	ctx := t.Context()
	_, _, _ = ms.Reserve(ctx, q, t0, time.Second, 0)
	_, _ = ms.Next(ctx, q, t0)
	_, _ = ms.Cancel(ctx, q, t0, pairstore.Ticket{})
	_, _ = ms.Refuse(ctx, q, t0, nil, 0)
	_ = ms.Accept(ctx, q, t0)
	_ = ms.Len()
}
