package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/wapace/wapace/pairlimit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCampaignSmall(t *testing.T) {
	cfg := Config{Recipients: 2000, Dups: 0.05, Bots: 10, Rounds: 3, MPS: 80, Seed: 7, Workers: 32}
	w := NewWorkload(cfg)
	rep, err := RunWapace(w)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(rep); err != nil {
		t.Error(err)
	}
	if rep.Collapsed == 0 || rep.Accepted != w.Len()-rep.Collapsed+cfg.Bots*cfg.Rounds*3 {
		t.Errorf("accepted %d, collapsed %d, list %d", rep.Accepted, rep.Collapsed, w.Len())
	}
	naive, err := RunNaive(w)
	if err != nil {
		t.Fatal(err)
	}
	// The naive sender trips the pair limit with its bots and sends the
	// duplicates twice: the comparison the example exists to show.
	if naive.PairRefusals == 0 || naive.DupsSent != rep.Collapsed {
		t.Errorf("naive run: %+v", naive)
	}
	var out bytes.Buffer
	Print(&out, cfg, rep, naive)
	if !strings.Contains(out.String(), "131056 (pair rate limit)") || !strings.Contains(out.String(), "simulated") {
		t.Errorf("report:\n%s", out.String())
	}
}

// BenchmarkCampaign runs the whole workload end to end through the real
// client against cloudapitest on simulated time, and reports the makespan
// against the theoretical minimum, the refusals, and the wall time per
// 10,000 messages.
func BenchmarkCampaign(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"10k-recipients-80mps", Config{Recipients: 10_000, Dups: 0.03, Bots: 20, Rounds: 4, MPS: 80, Seed: 1, Workers: 64}},
		{"100k-recipients-1000mps", Config{Recipients: 100_000, Dups: 0.03, Bots: 100, Rounds: 4, MPS: 1000, Seed: 1, Workers: 256}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w := NewWorkload(tc.cfg)
			var rep Report
			for b.Loop() {
				var err error
				if rep, err = RunWapace(w); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(rep.Ratio(), "makespan/min")
			b.ReportMetric(float64(rep.PairRefusals), "131056s")
			b.ReportMetric(float64(rep.NumRefusals), "130429s")
			b.ReportMetric(float64(rep.Wall.Milliseconds())/float64(rep.Accepted)*10_000, "wall-ms/10k-msgs")
		})
	}
}

// The workload is the same list as ever (pinned entries of seed 1), held
// in a few bytes per entry: a million-recipient list is no longer a
// million strings.
func TestWorkloadIsCompact(t *testing.T) {
	w := NewWorkload(Config{Recipients: 1000, Dups: 0.03, Seed: 1})
	if w.Len() != 1033 || w.At(0) != "+237 610 03 31 89" || w.At(1) != "237610026159" ||
		w.At(500) != "237610011359" || w.At(w.Len()-1) != "237610014504" {
		t.Errorf("workload changed: %d entries, %q %q %q %q", w.Len(), w.At(0), w.At(1), w.At(500), w.At(w.Len()-1))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC() // twice: what sync.Pools kept through one GC goes too
	runtime.ReadMemStats(&before)
	w = NewWorkload(Config{Recipients: 200_000, Dups: 0.03, Seed: 1})
	runtime.GC()
	runtime.ReadMemStats(&after)
	if per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(w.Len()); per > 8 {
		t.Errorf("the workload holds %.1f bytes per entry, want at most 8", per)
	}
	runtime.KeepAlive(w)
}

// ByRecipient holds the same entries, in the order of the recipients'
// normalized numbers (both spellings of a person side by side), and
// leaves the list it came from as the CRM exported it.
func TestByRecipient(t *testing.T) {
	w := NewWorkload(Config{Recipients: 5000, Dups: 0.1, Seed: 3})
	first := w.At(0)
	s := w.ByRecipient()
	if s.Len() != w.Len() || w.At(0) != first {
		t.Fatalf("%d entries sorted from %d; the original's first entry %q is now %q", s.Len(), w.Len(), first, w.At(0))
	}
	count := map[string]int{}
	for i := range w.Len() {
		count[w.At(i)]++
	}
	prev := ""
	for i := range s.Len() {
		count[s.At(i)]--
		n, err := pairlimit.NormalizeRecipient(s.At(i))
		if err != nil {
			t.Fatal(err)
		}
		if n < prev {
			t.Fatalf("entry %d: %s after %s", i, n, prev)
		}
		prev = n
	}
	for e, c := range count {
		if c != 0 {
			t.Errorf("entry %q: %d more in the list than sorted", e, c)
		}
	}
}
