package outbox

import (
	"context"
	"time"

	"github.com/wapace/wapace/throughput"
)

// How many sends Run keeps in flight.
//
// A number kept busy at its throughput figure R needs, by Little's law,
// R x T sends in flight, T being how long a send holds its place apart
// from waiting for the number's slot: from the write of its request to
// the commit that records its outcome and claims its lane's next item
// (Meta's round trip, the wait for the batch to record, the
// transaction). More than that waits in the Client for the number's
// slots: it sends nothing sooner, makes every claim older, and is left
// of unknown outcome by a crash. So Run wants, for each number with live
// items,
//
//	want = ceil(R x (T x cycleHeadroom + cycleSlack)) + 1
//
// sends in flight, R read from the Client (Client.Number's PerSecond: the
// figure less its headroom, and cut after refusals), T measured: an
// average over recent batches (weight cycleWeight) of the longest time,
// in the batch, between a request's write (when the lease's fence let its
// body go, fence.go) and the commit recording it; T starts at
// cycleStart. The headroom covers T's swings between batches, the slack
// a pause of the whole process (a collection, a scheduler's delay, the
// hog of the realtime tests). WithConcurrency caps the sum. Run records
// (and claims again) once 1/batchOf of what it wants has ended: the time
// a batch takes to fill is part of T, so the batch follows the wants (a
// small sender keeps small transactions and prompt records) and must be
// a fraction of them well under 1/cycleHeadroom, or T and the wants would
// feed each other (lingerFor bounds that wait in any case).
const (
	cycleHeadroom = 1.5
	cycleSlack    = 30 * time.Millisecond
	cycleWeight   = 0.25
	cycleStart    = 100 * time.Millisecond
)

// wantFor is what a number sending mps messages a second wants in flight
// when a send holds its place for cycle: at least 1, at most the cap.
func wantFor(mps int, cycle time.Duration, limit int) int {
	d := time.Duration(float64(cycle)*cycleHeadroom) + cycleSlack
	if mps <= 0 || d <= 0 {
		return 1
	}
	if d >= time.Duration(limit)*time.Second/time.Duration(mps) {
		return limit
	}
	// ceil(mps x d / 1 s) + 1, in integers (no rounding up of a product
	// that floating point makes a hair over a whole number).
	w := (int64(mps)*int64(d)+int64(time.Second)-1)/int64(time.Second) + 1
	return int(min(max(w, 1), int64(limit)))
}

// want is what number from wants in flight now: its share of the cap
// when the numbers together want more (budget sets scale), for this
// Run's share of its figure when Runs share the outbox (peers.go).
func (r *runner) want(from string) int {
	if w, ok := r.wants[from]; ok {
		return w
	}
	w := wantFor(r.peers.share(r.c.Number(from).PerSecond()), r.cycle, r.o.cfg.concurrency)
	if r.scale < 1 {
		w = max(1, int(float64(w)*r.scale))
	}
	if r.wants == nil {
		r.wants = map[string]int{}
	}
	r.wants[from] = w
	return w
}

// budget is the most sends Run wants in flight now: the wants of the
// numbers with live items it knows of, capped by WithConcurrency. With
// SQLite it lists them (every sendersEvery); with Postgres, whose picks
// stay in due order, it knows the numbers of its sends in flight and of
// its last picks, and wants one number at Meta's default figure more, so
// that a pick can still meet a number it does not know yet; each figure
// is shared by the Runs on the outbox (peers.go), counted here.
func (r *runner) budget(ctx context.Context, now time.Time) (int, error) {
	o := r.o
	if r.beatPeers(ctx, now) || r.wantsAt.IsZero() || !now.Before(r.wantsAt) {
		// The figures and the cycle may have changed: ask again (at most
		// every sendersEvery, so that many numbers cost little a step).
		r.wants, r.scale, r.wantsAt = nil, 1, now.Add(sendersEvery)
	}
	if !o.d.postgres && (r.sendersAt.IsZero() || !now.Before(r.sendersAt)) {
		senders, err := r.listSenders(ctx, o.db)
		if err != nil {
			return 0, err
		}
		r.senders, r.sendersAt = senders, now.Add(sendersEvery)
	}
	total, seen := 0, map[string]bool{}
	add := func(from string) {
		if !seen[from] {
			seen[from] = true
			total += r.want(from)
		}
	}
	for _, s := range r.senders {
		add(s)
	}
	for _, it := range r.inflight {
		add(it.From)
	}
	if o.d.postgres {
		for _, s := range r.picked {
			add(s)
		}
		total += wantFor(r.peers.share(throughput.Default), r.cycle, o.cfg.concurrency)
	}
	if len(seen) == 0 {
		// Nothing known yet: as for one number at Meta's default figure.
		total = wantFor(throughput.Default, r.cycle, o.cfg.concurrency)
	}
	if total > o.cfg.concurrency {
		// Each number its share of the cap, in proportion to its want.
		f := float64(o.cfg.concurrency) / float64(total)
		r.scale *= f
		total = o.cfg.concurrency
		for s, w := range r.wants {
			r.wants[s] = max(1, int(float64(w)*f))
		}
	}
	r.batch.Store(int64(max(1, total/batchOf)))
	return total, nil
}

// measure takes the cycle of the sends fs, recorded (with the claims made
// in the same transaction) at at: the longest, among those accepted at
// their first attempt, from the write of the request to at.
func (r *runner) measure(fs []finished, at time.Time) {
	longest := time.Duration(0)
	for _, f := range fs {
		if f.err != nil || f.res == nil || f.res.Attempts != 1 || f.wrote == 0 {
			continue
		}
		longest = max(longest, at.Sub(time.Unix(0, f.wrote)))
	}
	if longest <= 0 {
		return
	}
	r.cycle += time.Duration(cycleWeight * float64(longest-r.cycle))
}
