package throughput_test

import (
	"slices"
	"testing"
	"time"

	"github.com/wapace/wapace/throughput"
	"pgregory.net/rapid"
)

// TestSetMPSAtMovesWaitingReservations: a Limiter with moving
// reservations (the cloudapi Client's), its senders following their
// moves. Sends are reserved in bursts of callers (a queue at the old
// figure) and one by one, and the figure is raised or cut once or twice
// while they wait (80, 1,000 and 10,000 msg/s, with or without a
// headroom). A send goes at its reservation's instant as moved by the
// changes made before it went. Then:
//
//   - every closed second that starts a second or more after a change
//     (SetMPSAt's promise: the second before may hold sends made at the
//     old figure) and ends before the next holds at most that change's
//     PerSecond(), so a cut never lets the queue exceed the new figure;
//   - no closed second holds more than the highest figure;
//   - after a raise (the only change: a cut before it leaves a debt), the
//     k sends waiting then go at the new pace: the last of them within
//     k + 1 intervals of the new figure (at 98 % of it), not at the
//     instant the old figure gave it.
func TestSetMPSAtMovesWaitingReservations(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		figures := []int{throughput.Default, throughput.Upgraded, 10_000}
		var opts []throughput.Option
		if rapid.Bool().Draw(t, "headroom") {
			opts = append(opts, throughput.WithHeadroom(0.1))
		}
		lim := throughput.New(rapid.SampledFrom(figures).Draw(t, "mps"), append(opts, moving())...)
		type change struct {
			at        time.Time
			perSecond int
		}
		changes := []change{{t0, lim.PerSecond()}}
		var waiting []throughput.Reservation
		var arrivals []time.Time
		now := t0
		// goneBy sends the waiting reservations due by t.
		goneBy := func(t time.Time) {
			kept := waiting[:0]
			for _, r := range waiting {
				if at := r.TimeToAct(); !at.After(t) {
					arrivals = append(arrivals, at)
				} else {
					kept = append(kept, r)
				}
			}
			waiting = kept
		}
		var raisedAt time.Time              // the last raise, if it was the last change
		var queued []throughput.Reservation // those waiting then
		for range rapid.IntRange(1, 12).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(1500*time.Millisecond)).Draw(t, "dt")))
			goneBy(now)
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0: // a queue of callers at once
				for range rapid.IntRange(1, 3000).Draw(t, "queue") {
					waiting = append(waiting, lim.ReserveN(now, 1))
				}
			case 1: // one
				waiting = append(waiting, lim.ReserveN(now, 1))
			case 2: // a change of figure
				before := lim.PerSecond()
				if err := lim.SetMPSAt(now, rapid.SampledFrom(figures).Draw(t, "to")); err != nil {
					t.Fatal(err)
				}
				changes = append(changes, change{now, lim.PerSecond()})
				raisedAt, queued = time.Time{}, nil
				if lim.PerSecond() > before {
					raisedAt, queued = now, slices.Clone(waiting)
				}
			}
		}
		goneBy(time.Unix(1<<40, 0))
		slices.SortFunc(arrivals, time.Time.Compare)
		highest := 0
		for _, c := range changes {
			highest = max(highest, c.perSecond)
		}
		if got := maxInWindow(arrivals, time.Second); got > highest {
			t.Fatalf("%d sends in a closed second, highest figure %d", got, highest)
		}
		for j, c := range changes {
			end := time.Unix(1<<40, 0)
			if j+1 < len(changes) {
				end = changes[j+1].at
			}
			var in []time.Time
			for _, a := range arrivals {
				if !a.Before(c.at.Add(time.Second)) && a.Before(end) {
					in = append(in, a)
				}
			}
			for i, a := range in {
				k := 0
				for _, b := range in[i:] {
					if b.After(a.Add(time.Second)) {
						break
					}
					k++
				}
				if a.Add(time.Second).Before(end) && k > c.perSecond {
					t.Fatalf("%d sends in the closed second from +%v, after change %d to %d msg/s at +%v", k, a.Sub(t0), j, c.perSecond, c.at.Sub(t0))
				}
			}
		}
		if k := len(queued); k > 0 && len(changes) == 2 {
			last := raisedAt
			for _, r := range queued {
				if at := r.TimeToAct(); at.After(last) {
					last = at
				}
			}
			within := time.Duration(k+1) * (time.Second / time.Duration(lim.PerSecond()*98/100))
			if last.Sub(raisedAt) > within {
				t.Fatalf("the last of %d sends waiting at the raise to %d msg/s went %v after it, want within %v", k, lim.PerSecond(), last.Sub(raisedAt), within)
			}
		}
	})
}
