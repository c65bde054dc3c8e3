package pairlimit_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/pairlimit"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// at returns t0 plus the given offsets.
func at(offsets ...time.Duration) []time.Time {
	out := make([]time.Time, len(offsets))
	for i, d := range offsets {
		out[i] = t0.Add(d)
	}
	return out
}

// burst returns n offsets spread evenly over the first second.
func burst(start time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = start + time.Duration(i)*time.Second/time.Duration(n)
	}
	return out
}

func accepted(vs []pairlimit.Verdict) []bool {
	out := make([]bool, len(vs))
	for i, v := range vs {
		out[i] = v.Accepted
	}
	return out
}

func repeat(b bool, n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func TestReplayModel(t *testing.T) {
	t.Parallel()
	s := time.Second
	tests := []struct {
		name  string
		sends []time.Duration
		want  []bool
	}{
		{"steady 6 s spacing", []time.Duration{0, 6 * s, 12 * s, 18 * s, 24 * s}, repeat(true, 5)},
		{"burst of 20 then the 21st refused until t0+120s",
			append(burst(0, 20), 30*s, 119*s, 120*s),
			append(repeat(true, 20), false, false, true)},
		{"burst of 45 then 4.5 minutes of silence",
			append(burst(0, 45), 269*s, 270*s),
			append(repeat(true, 45), false, true)},
		{"the 46th in a burst is refused", burst(0, 46), append(repeat(true, 45), false)},
		{"joins only inside the burst window",
			[]time.Duration{0, 5 * s, 6 * s, 18 * s},
			// 0 starts a burst (due 6), 5 joins (due 12), 6 is past the
			// window and before due: refused; 18 starts a new burst.
			[]bool{true, true, false, true}},
		{"a refused send changes nothing", []time.Duration{0, 1 * s, 7 * s, 11 * s, 12 * s}, []bool{true, true, false, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := accepted(pairlimit.Replay(pairlimit.Meta, at(tt.sends...)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("accepted (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplayNamesTheCause(t *testing.T) {
	t.Parallel()
	// A bot sends 20 bubbles in a second; two minutes later, an ordinary
	// message is refused. Its verdict points back at the burst.
	sends := at(append(burst(0, 20), 100*time.Second)...)
	vs := pairlimit.Replay(pairlimit.Meta, sends)
	victim := vs[20]
	want := pairlimit.Verdict{At: sends[20], Accepted: false, Debt: 20 * time.Second, BurstStart: t0, BurstLen: 20}
	if diff := cmp.Diff(want, victim); diff != "" {
		t.Errorf("victim verdict (-want +got):\n%s", diff)
	}
}

func TestReplayUnsortedAndZeroPolicy(t *testing.T) {
	t.Parallel()
	sends := at(12*time.Second, 0, 6*time.Second, 7*time.Second)
	vs := pairlimit.Replay(pairlimit.Policy{}, sends) // zero Policy is Meta's
	if diff := cmp.Diff([]bool{false, true, true, true}, accepted(vs)); diff != "" {
		// In time order: 0 new burst; 6 new burst (due 12); 7 joins (due 18);
		// 12 is past the window and owes until 18.
		t.Errorf("accepted (-want +got):\n%s", diff)
	}
	if vs[0].Debt != 6*time.Second {
		t.Errorf("debt at +12s = %v, want 6s", vs[0].Debt)
	}
	if got := pairlimit.Replay(pairlimit.Meta, nil); len(got) != 0 {
		t.Errorf("Replay(nil) = %v", got)
	}
}
