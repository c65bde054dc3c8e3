package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/examples/internal/rawsend"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/simclock"
	"golang.org/x/time/rate"
)

// Config is one campaign workload.
type Config struct {
	Recipients int     // unique recipients of the campaign template
	Dups       float64 // fraction listed a second time in another spelling
	Bots       int     // live conversations with multi-bubble replies
	Rounds     int     // bot replies per conversation
	MPS        int     // the number's throughput
	Seed       uint64
	Workers    int
	// Freshness is the campaign template's freshness deadline, from the
	// start (0: none): the outbox rejects at enqueue what could not go by
	// then, and dead-letters what passes it while queued.
	Freshness time.Duration
	// OutboxDir holds the outbox's SQLite file ("": a temporary
	// directory, removed afterwards).
	OutboxDir string
	// MemProfile, if set, is where a heap profile is written as the
	// campaign ends (before the outbox is closed).
	MemProfile string
	// Shuffled has RunWapace enqueue the list as the CRM exported it,
	// not sorted by recipient (see ByRecipient).
	Shuffled bool
}

// Workload is the list a sender is given: campaign entries (with
// duplicates) and the bot users.
type Workload struct {
	// order lists the entries as the customer's CRM exports them, each
	// as 2 x the recipient's index + 1 for the second spelling: 4 bytes
	// an entry instead of a string, and At spells it out.
	order []uint32
	Bots  []string
	cfg   Config
}

// Len is the number of entries in the list.
func (w Workload) Len() int { return len(w.order) }

// At returns the list's ith entry, as the CRM spells it.
func (w Workload) At(i int) string {
	v := w.order[i]
	d := fmt.Sprintf("%08d", subscriber(v))
	if v%2 == 1 {
		return "2376" + d // the same person, another spelling
	}
	return "+237 6" + d[:2] + " " + d[2:4] + " " + d[4:6] + " " + d[6:8]
}

// subscriber is the last eight digits of entry v's number (all numbers
// are +237 6 and eight digits).
func subscriber(v uint32) int { return 10_000_000 + int(v/2)*37%89_999_999 }

// ByRecipient returns the list sorted by the recipients' numbers, both
// spellings of a person side by side; w is left as it was.
//
// A sorted list is still the cheapest to hand to the outbox: its keys
// (here one per person) and its lanes' names (one per recipient) are
// indexed, and SQLite writes a whole page of an index for every entry it
// adds. Enqueued in a random order, each recipient's key and new lane
// land on pages of their own; in order, those indexes grow at their ends
// and a page takes many recipients. (The outbox's other indexes follow
// the order of enqueue whatever the list's, since schema 7 numbers the
// lanes. A million recipients, enqueued 20,000 at a time: 9.1 GB written
// to disk in random order, 5.3 GB sorted; 35 GB in random order before.)
func (w Workload) ByRecipient() Workload {
	w.order = slices.Clone(w.order)
	slices.SortStableFunc(w.order, func(a, b uint32) int { return cmp.Compare(subscriber(a), subscriber(b)) })
	return w
}

// NewWorkload builds the workload deterministically from cfg.Seed.
func NewWorkload(cfg Config) Workload {
	r := rand.New(rand.NewPCG(cfg.Seed, 99))
	w := Workload{cfg: cfg, order: make([]uint32, 0, cfg.Recipients+int(float64(cfg.Recipients)*cfg.Dups*1.1)+16)}
	for i := range cfg.Recipients {
		w.order = append(w.order, uint32(2*i))
		if r.Float64() < cfg.Dups {
			w.order = append(w.order, uint32(2*i+1))
		}
	}
	r.Shuffle(len(w.order), func(i, j int) { w.order[i], w.order[j] = w.order[j], w.order[i] })
	for i := range cfg.Bots {
		w.Bots = append(w.Bots, fmt.Sprintf("+44 7700 9%05d", i))
	}
	return w
}

// Report is what one sender achieved.
type Report struct {
	Name          string
	Accepted      int
	Collapsed     int           // duplicates recognised and not sent
	Rejected      int           // refused at enqueue (queue or reject)
	Outbox        *outbox.Stats // the outbox's counts after the run (nil: no outbox)
	DupsSent      int           // duplicates sent twice to one person
	Lost          int           // messages that never got through
	Makespan      time.Duration // until the campaign's last template was accepted
	Minimum       time.Duration // messages the number sent by then / mps
	Within        int           // messages the number sent by then
	PairRefusals  int           // 131056 answers
	NumRefusals   int           // 130429 answers
	WorstPairWait time.Duration // longest a bot message waited for its pair
	Wall          time.Duration
}

// Ratio is makespan over the theoretical minimum.
func (r Report) Ratio() float64 { return r.Makespan.Seconds() / r.Minimum.Seconds() }

// Rate is the achieved rate in messages per second over the campaign.
func (r Report) Rate() float64 { return float64(r.Within) / r.Makespan.Seconds() }

func bubbles(to string, round int) []cloudapi.Message {
	return []cloudapi.Message{
		cloudapi.Text(to, fmt.Sprintf("Reply %d, part 1", round)),
		cloudapi.Text(to, fmt.Sprintf("Reply %d, part 2", round)),
		cloudapi.Text(to, fmt.Sprintf("Reply %d, part 3", round)),
	}
}

// userThinks is how long a quick user takes to answer a bot.
func userThinks(r *rand.Rand) time.Duration {
	return 2*time.Second + time.Duration(r.IntN(3000))*time.Millisecond
}

// RunWapace sends the workload through wapace: the campaign through a
// durable outbox on an embedded SQLite file (sorted by recipient, unless
// cfg.Shuffled, and enqueued in transactions of enqueueBatch entries,
// each recipient keyed once, so that a second spelling of the same person
// stores nothing), dispatched by the outbox's Run through the client; the
// bots' multi-bubble replies straight through the same client. Both share
// the number's throughput and the pair limiter.
func RunWapace(w Workload) (Report, error) {
	cfg := w.cfg
	pairs := pairlimit.New(pairlimit.Meta)
	// The outbox remembers every key durably; the client's own memory of
	// sent keys (100,000 by default, about 1 KiB each) need only cover
	// the sends in flight and the bots' replies.
	world, err := newWorld(cfg.MPS, cloudapi.WithPairLimiter(pairs), cloudapi.WithIdempotencyMemory(10_000, 24*time.Hour))
	if err != nil {
		return Report{}, err
	}
	defer world.Meta.Close()
	rep := Report{Name: "wapace"}
	var mu sync.Mutex
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		rep.Lost++
		if firstErr == nil {
			firstErr = err
		}
	}

	dir := cfg.OutboxDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "wapace-campaign"); err != nil {
			return rep, err
		}
		defer os.RemoveAll(dir)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var enqueued, settled atomic.Int64
	enqueuing := atomic.Bool{}
	enqueuing.Store(true)
	ob, err := outbox.Open(ctx, "sqlite:"+filepath.Join(dir, "campaign.db"),
		outbox.WithClock(world.Clock), outbox.WithClient(world.Client), // the limits are the Client's
		// Sends in flight each wait for their slot in the client; more of
		// them lets Run record outcomes in bigger batches.
		outbox.WithConcurrency(4*cfg.Workers),
		outbox.WithObserver(func(e outbox.Event) {
			if e.State.Final() && e.State != outbox.StateSending && settled.Add(1) == enqueued.Load() && !enqueuing.Load() {
				stop() // the whole campaign is settled
			}
		}))
	if err != nil {
		return rep, err
	}
	defer ob.Close()

	wall := time.Now()
	if !cfg.Shuffled {
		w = w.ByRecipient()
	}
	// Enqueue the list in batches of enqueueBatch, one transaction each:
	// queue or reject, nothing sent yet.
	for start := 0; start < w.Len(); start += enqueueBatch {
		msgs := make([]cloudapi.Message, min(enqueueBatch, w.Len()-start))
		for i := range msgs {
			to := w.At(start + i)
			n, err := pairlimit.NormalizeRecipient(to)
			if err != nil {
				return rep, err
			}
			m := cloudapi.Template(to, "winter_sale", "en")
			m.Category = cloudapi.CategoryMarketing
			m.IdempotencyKey = "winter_sale:" + n // one per person, whatever the spelling
			if cfg.Freshness > 0 {
				m.ExpiresAt = simStart.Add(cfg.Freshness)
			}
			msgs[i] = m
		}
		res, err := ob.EnqueueMany(ctx, numberID, msgs...)
		if err != nil {
			return rep, err
		}
		for _, r := range res {
			switch {
			case r.Err != nil:
				rep.Rejected++
			case r.Ticket.Existing:
				rep.Collapsed++
			default:
				enqueued.Add(1)
			}
		}
	}
	enqueuing.Store(false)

	var runErr error
	world.Clock.Run(func() {
		if enqueued.Load() > 0 {
			world.Clock.Go(func() {
				if err := ob.Run(ctx, world.Client); !errors.Is(err, context.Canceled) {
					runErr = err
				}
			})
		}
		for i, user := range w.Bots {
			r := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
			world.Clock.Go(func() {
				world.Clock.Sleep(time.Duration(r.IntN(60_000)) * time.Millisecond)
				for round := range cfg.Rounds {
					asked := world.Clock.Now()
					rs, err := world.Client.SendBurst(context.Background(), numberID, bubbles(user, round)...)
					if err != nil {
						fail(err)
						return
					}
					mu.Lock()
					rep.WorstPairWait = max(rep.WorstPairWait, rs[0].SentAt.Sub(asked))
					mu.Unlock()
					world.Clock.Sleep(userThinks(r))
				}
			})
		}
	})
	rep.Wall = time.Since(wall)
	if cfg.MemProfile != "" {
		if err := writeHeapProfile(cfg.MemProfile); err != nil {
			return rep, err
		}
	}
	if runErr != nil {
		return rep, runErr
	}
	st, err := ob.Snapshot(context.Background())
	if err != nil {
		return rep, err
	}
	rep.Outbox = &st
	rep.Lost += st.Counts[outbox.StateQueued] + st.Counts[outbox.StateSending] + st.Counts[outbox.StateFailed] + st.Counts[outbox.StateSubmittedUnknown]
	fillFromTally(&rep, world.Meta, world.Tally, cfg.MPS)
	return rep, firstErr
}

// RunNaive sends the same workload the way many senders do today: the list
// as it comes, one account-wide limiter at the number's rate, no pair
// pacing, and a doubling retry from 1 s on any throttling error.
func RunNaive(w Workload) (Report, error) {
	cfg := w.cfg
	clk := simclock.New(simStart)
	t := &tally{perTo: map[string]int{}}
	meta := cloudapitest.NewServer(nil, cloudapitest.WithClock(clk), cloudapitest.WithThroughput(cfg.MPS),
		cloudapitest.WithHistory(1000), cloudapitest.WithRequestObserver(t.add))
	defer meta.Close()
	hc := meta.Client()
	lim := rate.NewLimiter(rate.Limit(cfg.MPS), cfg.MPS) // burst = rate: the usual setting
	var limMu sync.Mutex                                 // explicit-time calls must come in order
	rep := Report{Name: "naive"}
	var mu sync.Mutex
	send := func(to, typ string) bool {
		for attempt := range 6 {
			limMu.Lock()
			now := clk.Now()
			d := lim.ReserveN(now, 1).DelayFrom(now)
			limMu.Unlock()
			clk.Sleep(d)
			var err error
			if typ == "template" {
				err = rawsend.Template(hc, numberID, to, "winter_sale")
			} else {
				err = rawsend.Text(hc, numberID, to, "hello")
			}
			if err == nil {
				return true
			}
			clk.Sleep(time.Duration(1<<attempt) * time.Second)
		}
		mu.Lock()
		rep.Lost++
		mu.Unlock()
		return false
	}
	queue := make(chan int, w.Len())
	for i := range w.Len() {
		queue <- i
	}
	close(queue)
	wall := time.Now()
	clk.Run(func() {
		for range cfg.Workers {
			clk.Go(func() {
				for i := range queue {
					send(w.At(i), "template")
				}
			})
		}
		for i, user := range w.Bots {
			r := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
			clk.Go(func() {
				clk.Sleep(time.Duration(r.IntN(60_000)) * time.Millisecond)
				for range cfg.Rounds {
					asked := clk.Now()
					for range 3 {
						send(user, "text")
					}
					mu.Lock()
					rep.WorstPairWait = max(rep.WorstPairWait, clk.Now().Sub(asked))
					mu.Unlock()
					clk.Sleep(userThinks(r))
				}
			})
		}
	})
	rep.Wall = time.Since(wall)
	fillFromTally(&rep, meta, t, cfg.MPS)
	// Duplicates the naive sender delivered twice to one person.
	for _, n := range t.perTo {
		rep.DupsSent += n - 1
	}
	return rep, nil
}

// fillFromTally reads the outcome off the tally kept as the fake answered
// and the fake's counts. The makespan is the campaign's: until its last
// template was accepted; the minimum is every message the number sent by
// then (templates and bot replies) at its rate.
func fillFromTally(rep *Report, meta *cloudapitest.Server, t *tally, mps int) {
	rep.Accepted = t.accepted
	rep.Makespan, rep.Within = t.lastTemplate.Sub(simStart), t.atLast
	rep.Minimum = time.Duration(float64(t.atLast) / float64(mps) * float64(time.Second))
	rep.PairRefusals = meta.Count(errcodes.PairRateLimit)
	rep.NumRefusals = meta.Count(errcodes.ThroughputLimit)
}

// enqueueBatch is how many recipients one EnqueueMany stores. A list in
// a CRM's order adds its keys (and its new lanes) at random places of two
// indexes, and each transaction writes every page it touched once: at a
// million recipients, transactions of 2,000 touched nearly a page per
// entry of each index, transactions of 20,000 under half a page (500,000
// recipients in random order: 8.2 GB written to disk, against 3.6 GB).
const enqueueBatch = 20_000

// Print writes the reports side by side.
func Print(out io.Writer, cfg Config, rs ...Report) {
	fmt.Fprintf(out, "Campaign: %d recipients (+%.0f%% listed twice in another spelling), %d bot conversations x %d three-bubble replies, one number at %d msg/s.\n",
		cfg.Recipients, cfg.Dups*100, cfg.Bots, cfg.Rounds, cfg.MPS)
	fmt.Fprintf(out, "Time is simulated (a discrete-event clock): instants are exact, the run takes seconds.\n\n")
	row := func(label string, f func(Report) string) {
		fmt.Fprintf(out, "%-34s", label)
		for _, r := range rs {
			fmt.Fprintf(out, "%18s", f(r))
		}
		fmt.Fprintln(out)
	}
	row("", func(r Report) string { return r.Name })
	row("messages accepted", func(r Report) string { return fmt.Sprint(r.Accepted) })
	row("duplicates collapsed", func(r Report) string { return fmt.Sprint(r.Collapsed) })
	row("duplicates sent twice", func(r Report) string { return fmt.Sprint(r.DupsSent) })
	row("messages lost", func(r Report) string { return fmt.Sprint(r.Lost) })
	row("131056 (pair rate limit)", func(r Report) string { return fmt.Sprint(r.PairRefusals) })
	row("130429 (throughput)", func(r Report) string { return fmt.Sprint(r.NumRefusals) })
	row("campaign duration (simulated)", func(r Report) string { return r.Makespan.Round(10 * time.Millisecond).String() })
	row("theoretical minimum (sent / mps)", func(r Report) string { return r.Minimum.Round(10 * time.Millisecond).String() })
	row("duration / minimum", func(r Report) string { return fmt.Sprintf("%.4f", r.Ratio()) })
	row("achieved rate (msg/s)", func(r Report) string { return fmt.Sprintf("%.2f", r.Rate()) })
	row("worst wait of a bot reply", func(r Report) string { return r.WorstPairWait.Round(10 * time.Millisecond).String() })
	row("wall time", func(r Report) string { return r.Wall.Round(time.Millisecond).String() })
	outboxRow := func(label string, f func(outbox.Stats) int) {
		row(label, func(r Report) string {
			if r.Outbox == nil {
				return "-"
			}
			return fmt.Sprint(f(*r.Outbox))
		})
	}
	fmt.Fprintf(out, "\nThe campaign through the outbox (embedded SQLite; the bots' replies go straight through the client):\n")
	row("rejected at enqueue", func(r Report) string {
		if r.Outbox == nil {
			return "-"
		}
		return fmt.Sprint(r.Rejected)
	})
	outboxRow("queued (left)", func(s outbox.Stats) int { return s.Counts[outbox.StateQueued] + s.Counts[outbox.StateSending] })
	outboxRow("accepted", func(s outbox.Stats) int { return s.Counts[outbox.StateAccepted] })
	outboxRow("submitted_unknown", func(s outbox.Stats) int { return s.Counts[outbox.StateSubmittedUnknown] })
	outboxRow("expired", func(s outbox.Stats) int { return s.Counts[outbox.StateExpired] })
	outboxRow("dead-lettered (expired + failed)", func(s outbox.Stats) int { return s.DeadLetters })
}

// Check reports whether the wapace run met its promises.
func Check(r Report) error {
	var errs []string
	if r.PairRefusals != 0 || r.NumRefusals != 0 {
		errs = append(errs, fmt.Sprintf("%d 131056 and %d 130429 answers", r.PairRefusals, r.NumRefusals))
	}
	if r.Rejected != 0 {
		errs = append(errs, fmt.Sprintf("%d rejected at enqueue", r.Rejected))
	}
	if r.Lost != 0 || r.DupsSent != 0 {
		errs = append(errs, fmt.Sprintf("%d lost, %d duplicates sent", r.Lost, r.DupsSent))
	}
	if r.Ratio() > 1.02 {
		errs = append(errs, fmt.Sprintf("duration %.4f x the minimum", r.Ratio()))
	}
	if len(errs) > 0 {
		return errors.New("wapace run: " + strings.Join(errs, "; "))
	}
	return nil
}

// writeHeapProfile writes the live heap to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
