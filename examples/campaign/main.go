// Command campaign is wapace's main job: one business number sends a
// template to a list of recipients (some listed twice in different
// spellings) through a durable outbox on an embedded SQLite file, while
// bots hold quick conversations with multi-bubble replies, against a fake
// Meta on simulated time. It prints what wapace achieved and
// what a naive sender achieves on the same workload, and exits non-zero if
// wapace drew a single 131056 or 130429, lost or duplicated a message, or
// ran more than 2 % slower than the number allows.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

func main() { os.Exit(run()) }

// run is main, returning the exit code (so that the profile is flushed).
func run() int {
	var cfg Config
	flag.IntVar(&cfg.Recipients, "n", 10_000, "unique recipients of the campaign")
	flag.Float64Var(&cfg.Dups, "dups", 0.03, "fraction of recipients listed twice in another spelling")
	flag.IntVar(&cfg.Bots, "bots", 20, "live bot conversations")
	flag.IntVar(&cfg.Rounds, "rounds", 4, "three-bubble bot replies per conversation")
	flag.IntVar(&cfg.MPS, "mps", 80, "the number's throughput in messages per second (80, 1000 or 20)")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the workload")
	flag.IntVar(&cfg.Workers, "workers", 64, "sends in flight at once")
	flag.DurationVar(&cfg.Freshness, "fresh", 30*time.Minute, "the campaign template's freshness deadline, from the start")
	flag.StringVar(&cfg.OutboxDir, "outbox", "", "directory for the outbox's SQLite file (default: a temporary one)")
	flag.BoolVar(&cfg.Shuffled, "shuffled", false, "enqueue the list as the CRM exported it, not sorted by recipient")
	naive := flag.Bool("naive", true, "also run the naive sender for comparison")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.StringVar(&cfg.MemProfile, "memprofile", "", "write a heap profile, taken as the campaign ends, to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "campaign:", err)
			return 2
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "campaign:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	if cfg.Recipients < 1 || cfg.MPS < 1 || cfg.Workers < 1 || cfg.Bots < 0 || cfg.Rounds < 0 || cfg.Dups < 0 || cfg.Dups > 1 || cfg.Freshness <= 0 {
		fmt.Fprintln(os.Stderr, "campaign: -n, -mps, -workers and -fresh must be positive; -dups between 0 and 1")
		return 2
	}

	w := NewWorkload(cfg)
	rep, err := RunWapace(w)
	if err != nil {
		fmt.Fprintln(os.Stderr, "campaign:", err)
		return 1
	}
	reports := []Report{rep}
	if *naive {
		nrep, err := RunNaive(w)
		if err != nil {
			fmt.Fprintln(os.Stderr, "campaign:", err)
			return 1
		}
		reports = append(reports, nrep)
	}
	Print(os.Stdout, cfg, reports...)
	if err := Check(rep); err != nil {
		fmt.Fprintln(os.Stderr, "campaign:", err)
		return 1
	}
	return 0
}
