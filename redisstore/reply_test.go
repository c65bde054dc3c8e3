package redisstore

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// packState packs a pair's state as pairSave does.
func packState(bs, bn, d, h, top, hw, f, m, fl float64) string {
	b := make([]byte, 0, 72)
	for _, x := range []float64{bs, bn, d, h, top, hw, f, m, fl} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return string(b)
}

// reserveFrom decides from the state the reserve script found as the
// script does, reads the script's own answer on miniredis, and rejects any
// other shape.
func TestReserveFrom(t *testing.T) {
	const (
		tn   = int64(1_764_536_400_123_456_789)
		base = int64(1_764_536_390_000_000_500)
		cost = 6250 * time.Millisecond
		us   = uint64(tn / 1000)
	)
	owes := packState(1_764_536_390, 500, 15e9, 0, 42, 77, 0, 0, 1) // Due at base + 15 s
	for _, tc := range []struct {
		name    string
		v       any
		maxWait time.Duration
		want    pairstore.Ticket
		ok      bool
		shape   bool
	}{
		{"no state", "", pairlimit.InfDuration, pairstore.Ticket{ID: us, Act: tn, End: tn + int64(cost)}, true, true},
		{"owes", owes, pairlimit.InfDuration,
			pairstore.Ticket{ID: us, PrevTop: 42, PrevDue: base + 15e9, Act: base + 15e9, End: base + 15e9 + int64(cost)}, true, true},
		{"owes, refused", []any{owes}, time.Second, pairstore.Ticket{Act: base + 15e9}, false, true},
		{"repaid, refused", []any{packState(1_764_536_390, 500, 1e9, 0, 42, 77, 0, 0, 1)}, 0, pairstore.Ticket{Act: tn}, false, true},
		{"no state, refused", []any{""}, 0, pairstore.Ticket{Act: tn}, false, true},
		{"refused, short string", []any{owes[:64]}, 0, pairstore.Ticket{}, false, false},
		{"refused, not a string", []any{int64(1)}, 0, pairstore.Ticket{}, false, false},
		{"saturated", packState(1_764_536_390, 500, math.Ldexp(1, 63), 0, 42, 77, 0, 0, 1), pairlimit.InfDuration,
			pairstore.Ticket{ID: us, PrevTop: 42, PrevDue: math.MaxInt64, Act: math.MaxInt64, End: math.MaxInt64}, true, true},
		{"saturated, refused", []any{packState(1_764_536_390, 500, math.Ldexp(1, 63), 0, 42, 77, 0, 0, 1)}, time.Second,
			pairstore.Ticket{Act: math.MaxInt64}, false, true},
		{"IDs reaching 2^53 start again", packState(1_764_536_390, 500, 0, 0, 9, 1<<53-1, 0, 0, 0), pairlimit.InfDuration,
			pairstore.Ticket{ID: 1, PrevTop: 9, Act: tn, End: tn + int64(cost)}, true, true},
		{"owes, wait just long enough", owes, time.Duration(base + 15e9 - tn),
			pairstore.Ticket{ID: us, PrevTop: 42, PrevDue: base + 15e9, Act: base + 15e9, End: base + 15e9 + int64(cost)}, true, true},
		{"repaid", packState(1_764_536_390, 500, 1e9, 0, 42, 77, 0, 0, 1), pairlimit.InfDuration,
			pairstore.Ticket{ID: us, PrevTop: 42, PrevDue: base + 1e9, Act: tn, End: tn + int64(cost)}, true, true},
		{"no Due set, only a stale offset", packState(1_764_536_390, 500, 99e9, 0, 0, 77, 0, 0, 0), pairlimit.InfDuration,
			pairstore.Ticket{ID: us, Act: tn, End: tn + int64(cost)}, true, true},
		{"IDs ahead of the clock", packState(1_764_536_390, 500, 0, 0, 9, float64(us+5), 0, 0, 0), pairlimit.InfDuration,
			pairstore.Ticket{ID: us + 6, PrevTop: 9, Act: tn, End: tn + int64(cost)}, true, true},
		{"array", []any{int64(3), int64(5e9), int64(us), int64(42), int64(-1e9)}, pairlimit.InfDuration,
			pairstore.Ticket{ID: us, PrevTop: 42, PrevDue: tn - 1e9, Act: tn + 5e9, End: tn + 5e9 + int64(cost)}, true, true},
		{"array, saturated", []any{int64(1), int64(math.MaxInt64 - tn + 5), int64(us), int64(42), int64(0)}, pairlimit.InfDuration,
			pairstore.Ticket{ID: us, PrevTop: 42, Act: math.MaxInt64, End: math.MaxInt64}, true, true},
		{"array, refused", []any{int64(0), int64(5e9), int64(0), int64(0), int64(0)}, time.Second,
			pairstore.Ticket{Act: tn + 5e9}, false, true},
		{"short string", owes[:64], pairlimit.InfDuration, pairstore.Ticket{}, false, false},
		{"short array", []any{int64(3)}, pairlimit.InfDuration, pairstore.Ticket{}, false, false},
		{"integer", int64(1), pairlimit.InfDuration, pairstore.Ticket{}, false, false},
		{"nil", nil, pairlimit.InfDuration, pairstore.Ticket{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, ok, shape := reserveFrom(tc.v, tn, cost, tc.maxWait)
			if shape != tc.shape || ok != tc.ok || (shape && tk != tc.want) {
				t.Errorf("reserveFrom = %+v, %v, %v; want %+v, %v, %v", tk, ok, shape, tc.want, tc.ok, tc.shape)
			}
		})
	}
}
