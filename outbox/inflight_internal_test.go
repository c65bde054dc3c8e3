package outbox

import (
	"testing"
	"time"
)

// TestWantFor pins what a number wants in flight: its figure times the
// cycle with headroom and slack, plus one, within [1, limit].
func TestWantFor(t *testing.T) {
	for _, tt := range []struct {
		name  string
		mps   int
		cycle time.Duration
		limit int
		want  int
	}{
		{"upgraded number, Meta at 200 ms", 1000, 250 * time.Millisecond, 1024, 406},
		{"default number, Meta at 200 ms", 80, 250 * time.Millisecond, 1024, 34},
		{"upgraded number, a fake on the machine", 1000, 50 * time.Millisecond, 1024, 106},
		{"capped", 1000, 2 * time.Second, 1024, 1024},
		{"a cap of one", 80, 250 * time.Millisecond, 1, 1},
		{"a number with no throughput", 0, time.Second, 1024, 1},
		{"no cycle measured", 20, 0, 1024, 2},
	} {
		if got := wantFor(tt.mps, tt.cycle, tt.limit); got != tt.want {
			t.Errorf("%s: wantFor(%d, %v, %d) = %d, want %d", tt.name, tt.mps, tt.cycle, tt.limit, got, tt.want)
		}
	}
}
