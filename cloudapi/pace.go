package cloudapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/clockwait"
	"github.com/wapace/wapace/internal/writemark"
	"github.com/wapace/wapace/internal/writewindow"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/throughput"
)

// Write-time pacing: the limits decide when a message may leave, but Meta
// counts it when it arrives. Between the decision and the write a
// goroutine may be descheduled, a GC may pause, a connection may be
// dialled: a message that leaves late lands next to the ones after it, and
// a second at Meta holds more than the number's figure.
//
// So the Client checks once more at the last moment it controls: the first
// read of the request body, which the transport makes once the connection
// is ready and before any byte of the body has left (for HTTP/1 with a body
// of unknown type the headers are flushed first; Meta cannot act on a
// message without its body).
//
// A number's limiter without a Store has a window of writes
// (throughput/window.go, through internal/writewindow): the check asks it
// to let the write go, which it does, however late the message is, while
// the writes of the last second and 5 ms, with those let go and not yet
// reported, are fewer than the figure; the message keeps its slot. When
// the window is full (sends bunched after a stall) the message waits for
// its room, as for a slot: inside the request when that is near, outside
// otherwise. The transport's report of the write (or, failing one, the
// end of the request) tells the window when the bytes were out; a body
// never let go gives its leave back. Every write of the number goes
// through the Client, so the window sees them all: the limiter paces at
// its full rate, with no margin for lateness, and a late send costs no
// slot (under load, with checks 15 to 25 ms late, the tolerance and its
// margin cost a number at 1,000 msg/s 5 to 8 % of its figure).
//
// With a Store, where other processes write for the number, the window
// cannot count every write, and the tolerance does the work: a message
// later than the number's tolerance
// (throughput.Limiter.Tolerance), or met by a hold of the number that began
// after it was admitted, gives its slot back at the slot's own instant
// (exact when no later slot stands on it) and takes a new one, as often as
// it takes (a message that can only leave late is never sent late: its
// deadline or its context ends the wait, and it is not submitted); met by
// a hold, it takes the new one only once the hold is over, at the figure
// in force then. The first bubble of a burst moves the pair's reservation
// with it, so that the pair owes from when the burst really starts.
//
// Long waits never happen inside a request: there a timeout runs (the
// *http.Client's, 30 s by default) and a connection is held, and a request
// that times out once its headers were written is indistinguishable, to
// the transport, from one whose message may have reached Meta. So the
// check waits in the request only for a slot at most inRequestWait away
// (an eighth of the request timeout, at most 250 ms); for a hold, or a slot further off (a
// new one behind the number's queue, one SetMPSAt moved later), it ends
// the request before any byte of the body leaves (errWaitOutside: not
// submitted, which the gate proves), and the send waits on the Client's
// clock, outside any request, then makes a new request for the message:
// the same attempt, no retry counted, its write mark not made twice. (On
// HTTP/1 the transport closes a connection whose request body failed; on
// HTTP/2 only the stream is reset.) A request that ends while the check
// holds its body, for whatever reason, is not submitted either: no byte
// of the body left, and none will.
//
// Every check and every write is reported to the number's limiter
// (ObserveSend), whose margin follows the lateness observed (with a
// Store; a limiter with a window observes nothing), as soon as the
// transport reports the write (httptrace's WroteRequest), before Meta's
// answer. A hold met by the check is waited out, window or not.

// paceWrites turns the write-time check on; only the benchmark that
// measures its cost turns it off (export_test.go).
var paceWrites = true

// gate is the write-time check of message k of an admission.
type gate struct {
	s     *sending
	a     *admission
	k     int
	num   *throughput.Limiter
	win   bool   // num has a window of writes: the check asks it, not the tolerance
	bytes []byte // the request body

	// posted is when the send began the request, read from the Client's
	// clock: the gate reads the time as posted plus the time since (see
	// now).
	posted time.Time

	// mark runs once before the first write (see ready), or is nil; key
	// is the message's idempotency key, given to it.
	mark  writemark.Func
	fence writemark.Fence
	key   string

	first pacedBody // the request's first body (a retry's GetBody makes new ones)

	mu      sync.Mutex // protects the fields below, and a's slots and pair while the request is out
	done    bool
	checked time.Time          // when the check let the body go
	ticket  writewindow.Ticket // the window's leave for this write (win), until finish
	aborted error              // why the check refused: no byte of the body left
	marked  bool               // mark has returned nil
	// released: a body was let go to the transport (it may have reached
	// Meta); no other body is let go after it (getBody).
	released bool
}

// now returns the Client clock's time. On the real clock it costs one
// monotonic reading (time.Since) where time.Now makes two, a wall and a
// monotonic one: on a virtual machine whose clock source is not the TSC
// (kvm-clock, for one) each is a pvclock read of 50 to 200 ns, and the
// gate reads the time twice on every send. The instant is the one
// time.Now would give, bar a step of the wall clock while the request was
// out (the monotonic clock is what the pacing measures anyway).
func (g *gate) now() time.Time { return g.posted.Add(g.s.c.clock.Since(g.posted)) }

// errGateDone: the body was read after the send gave up on the request.
var errGateDone = errors.New("cloudapi: request body read after the send ended")

// body returns the request body that runs the check on its first read.
func (g *gate) body(b []byte) io.ReadCloser {
	p := &pacedBody{g: g}
	p.r.Reset(b)
	return p
}

// errResend is the answer of getBody once a body was let go.
var errResend = errors.New("cloudapi: the transport asked for the request body again after it had let it go; refused, since the message may have reached Meta")

// getBody is the request's GetBody: a new body of the same bytes, checked
// again on its first read, as long as no body was let go. A transport
// that asks for the body again after it has written it (net/http's HTTP/2
// transport does, after some stream resets, even once the server has the
// whole body) would send the message twice: it gets errResend instead,
// and the message's outcome is unknown.
func (g *gate) getBody() (io.ReadCloser, error) {
	g.mu.Lock()
	released := g.released
	g.mu.Unlock()
	if released {
		return nil, errResend
	}
	return g.body(g.bytes), nil
}

// pacedBody is a request body whose first read runs the gate.
type pacedBody struct {
	g       *gate
	r       bytes.Reader
	checked bool
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if !b.checked {
		if err := b.g.ready(); err != nil {
			return 0, err
		}
		b.checked = true
	}
	return b.r.Read(p)
}

func (b *pacedBody) Close() error { return nil }

// errWaitOutside: the check found that the message must wait longer than
// inRequestWait (a slot moved or taken again behind a queue, a hold of
// the number), and ended the request before any byte of its body left,
// so that the wait happens outside the HTTP request (see
// sending.attempt), where no request timeout runs and no connection is
// held. It never reaches the caller.
var errWaitOutside = errors.New("cloudapi: the message waits for its slot outside the request")

// inRequestWait is the longest the check waits inside the request: an
// eighth of the request timeout, at most maxInRequestWait, and at least
// the number's tolerance or minInRequestWait. Ending a request costs its
// connection on HTTP/1, and a sender under load re-slots many sends a few
// tens of milliseconds back (512 sends in flight at 10,000 msg/s dialled
// 1,238 connections in three rounds when every wait over 5 ms ended its
// request), so short waits stay in the request, well under its timeout.
func (g *gate) inRequestWait() time.Duration {
	w := maxInRequestWait
	if t := g.s.c.hc.Timeout; t > 0 {
		w = min(w, t/8)
	}
	return max(w, g.num.Tolerance(), minInRequestWait)
}

// minInRequestWait and maxInRequestWait bound inRequestWait.
const (
	minInRequestWait = 5 * time.Millisecond
	maxInRequestWait = 250 * time.Millisecond
)

// check runs before the first byte of the body leaves. It waits in the
// request only for a slot, or the window's room, at most inRequestWait
// away; a longer wait ends the request with errWaitOutside.
func (g *gate) check() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return errGateDone
	}
	if g.aborted != nil {
		return g.aborted
	}
	for {
		sl := &g.a.slots[g.k]
		if slotStale(sl.num) {
			// The number's figure was cut (with a Store) since the
			// slot was taken: a slot at the new figure, as waitSlot
			// takes one.
			g.s.giveBack(g.a, g.k)
			err := g.s.slotAgain(g.a, g.k, g.num, g.now(), !g.released)
			if err == nil {
				err = g.waitShort(g.a.goAt(g.k))
			}
			if err != nil {
				g.aborted = err
				return err
			}
			continue
		}
		if at := sl.num.TimeToAct(); !at.Equal(sl.at) {
			// SetMPSAt moved the slot since the wait: wait for its new
			// instant (none if it moved earlier), then check it.
			if err := g.waitShort(at); err != nil {
				g.aborted = err
				return err
			}
			continue
		}
		now := g.now()
		held := g.num.HeldUntil().After(now)
		if held && !g.released {
			// A hold that began after the admission: waited out outside
			// the request, holding nothing (see sending.slotAgain).
			g.s.giveBack(g.a, g.k)
			g.aborted = errWaitOutside
			return errWaitOutside
		}
		if !held && g.win {
			if g.ticket == nil {
				// Late past the message's deadline (the process
				// stalled): not sent, as a slot past it is not.
				if err := g.s.late(now, sl.at, errcodes.HoldPhoneNumber); err != nil {
					g.aborted = err
					return err
				}
				k, wait := letWrite(g.num, now)
				if k == nil {
					// The window is full: the sends before it bunched
					// (see throughput/window.go). Wait for its room.
					if err := g.waitWindow(now.Add(wait)); err != nil {
						g.aborted = err
						return err
					}
					continue
				}
				g.ticket = k
			}
			g.checked = now
			return nil
		}
		if !held {
			if now.Sub(sl.at) <= g.num.Tolerance() {
				g.checked = now
				return nil
			}
			g.num.ObserveSend(sl.at, now, time.Time{})
		}
		g.s.giveBack(g.a, g.k)
		err := g.s.slotAgain(g.a, g.k, g.num, now, !g.released)
		if err == nil {
			err = g.waitShort(g.a.goAt(g.k))
		}
		if err != nil {
			g.aborted = err
			return err
		}
	}
}

// waitShort waits, inside the request, for message k's slot at (or, for
// the first bubble, the pair's reservation, whichever is later) if it is
// at most inRequestWait away; otherwise it returns errWaitOutside.
//
// Once a body was let go (a transport, or a RoundTripper in front of it,
// read the body GetBody made, then reads another), the message may be at
// Meta and ending the request would not prove it was not submitted: the
// check then waits in the request, whatever the wait, as it did before
// waits moved outside.
func (g *gate) waitShort(at time.Time) error {
	if !g.released && at.Sub(g.now()) > g.inRequestWait() {
		return errWaitOutside
	}
	return g.s.waitSlot(g.a, g.k)
}

// waitWindow waits, inside the request, until at, when the number's
// window of writes has room, if it is at most inRequestWait away;
// otherwise it returns errWaitOutside, and the send waits for it outside
// the request (waitSlot waits for the slot's window instant too).
func (g *gate) waitWindow(at time.Time) error {
	now := g.now()
	if err := g.s.late(at, now, errcodes.HoldPhoneNumber); err != nil {
		return err // the room comes after the message's deadline
	}
	g.a.slots[g.k].window = at
	if !g.released && at.Sub(now) > g.inRequestWait() {
		return errWaitOutside
	}
	return g.s.waitSlot(g.a, g.k)
}

// goAt is when message k of a may go: its slot, and for the first bubble
// the pair's reservation too.
func (a *admission) goAt(k int) time.Time {
	at := a.slots[k].at
	if k == 0 && a.pr.OK() {
		at = maxTime(at, a.pr.TimeToAct())
	}
	return at
}

// giveBack gives message k's slot back, at the slot's own instant (exact
// when no later slot stands on it), leaving it empty for slotAgain.
func (s *sending) giveBack(a *admission, k int) {
	sl := &a.slots[k]
	sl.num.CancelAt(sl.num.TimeToAct())
	sl.num = throughput.Reservation{}
}

// slotAgain takes a new slot of num for message k of a, whose slot was
// given back (giveBack), moving the pair's reservation with the first
// bubble; it does not wait for the slot. A hold of the number is waited
// out first, holding nothing, as admit's known waits are (a slot taken
// during the hold would be at the figure in force then, and keep its
// instant if the figure is raised during the hold: a throughput upgrade
// ends its minute of 131057 that way); inRequest, it returns
// errWaitOutside instead, since a hold is never waited out inside a
// request. A slot past the deadline fails with a *BackpressureError.
func (s *sending) slotAgain(a *admission, k int, num *throughput.Limiter, now time.Time, inRequest bool) error {
	c := s.c
	sl := &a.slots[k]
	for h := num.HeldUntil(); h.After(now); h = num.HeldUntil() {
		if err := s.late(h, now, errcodes.HoldPhoneNumber); err != nil {
			return err
		}
		if inRequest {
			return errWaitOutside
		}
		if err := clockwait.Until(s.ctx, c.clock, h); err != nil {
			return err
		}
		now = c.clock.Now()
	}
	r := num.ReserveN(now, 1)
	sl.num, sl.at = r, r.TimeToAct()
	if !r.OK() {
		return r.Err()
	}
	hold := errcodes.HoldPhoneNumber
	if k == 0 && a.pr.OK() {
		a.pr.Refund()
		a.pr = c.pairs.ReserveN(sl.at, a.pair, len(a.slots))
		if !a.pr.OK() {
			return a.pr.Err()
		}
		if pa := a.pr.TimeToAct(); pa.After(sl.at) { // another send to this user came in between
			r.CancelAt(now)
			r = num.ReserveN(pa, 1)
			sl.num, sl.at, hold = r, r.TimeToAct(), errcodes.HoldPair
			if !r.OK() {
				return r.Err()
			}
		}
	}
	return s.late(sl.at, now, hold)
}

// slotOutside is the wait the check left to the send (errWaitOutside): a
// hold, waited out before message k of a takes a new slot (when the check
// gave its slot back), or nothing, for waitSlot waits for a slot taken.
func (s *sending) slotOutside(a *admission, k int, num *throughput.Limiter) error {
	if a.slots[k].num.OK() {
		return nil
	}
	return s.slotAgain(a, k, num, s.c.clock.Now(), false)
}

// wrote reports to the number's limiter that the request's bytes went out
// at t, as the transport tells it (before Meta's answer, so that a pause
// for a late write comes before the sends after it): the limiter learns
// the lateness, and pauses the number for a write later than its margin
// covers. The first bubble of a burst moves the pair's reservation to t.
func (g *gate) wrote(t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.checked.IsZero() {
		return
	}
	if g.ticket != nil {
		g.ticket.Wrote(t)
	}
	g.num.ObserveSend(g.a.slots[g.k].at, g.checked, t)
	if g.k == 0 {
		g.a.pairAfterWrite(g.s.c.pairs, t)
	}
}

// finish ends the check: a body read after it fails. It returns why the
// check refused (nil if it did not), and whether a body was let go to the
// transport: if none was, none ever will be, and no byte of the message
// left, whatever the transport says.
func (g *gate) finish() (aborted error, released bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	if g.ticket != nil {
		if g.released {
			// Written, or maybe: counted from now at least, unless the
			// transport reported the write (then this does nothing).
			g.ticket.Wrote(g.now())
		} else {
			g.ticket.Drop() // no byte of the body left, and none will
		}
	}
	return g.aborted, g.released
}

// pairAfterWrite moves a burst's pair reservation to the instant its first
// bubble was written, when that is later than the reservation by more
// than half the pair's margin (at least 1 ms): the pair's next message is
// due from when the burst reached Meta, not from when it was decided.
func (a *admission) pairAfterWrite(pairs *pairlimit.Limiter, wrote time.Time) {
	if !a.pr.OK() || wrote.IsZero() {
		return
	}
	at := a.pr.TimeToAct()
	if wrote.Sub(at) <= max(pairs.Margin()/2, time.Millisecond) {
		return
	}
	a.pr.Refund()
	a.pr = pairs.ReserveN(wrote, a.pair, len(a.slots))
}

// pacedRequest sets body as req's body through gate g.
func pacedRequest(req *http.Request, g *gate, body []byte) {
	g.bytes = body
	g.first.g = g
	g.first.r.Reset(body)
	req.Body = &g.first
	req.ContentLength = int64(len(body))
	req.GetBody = g.getBody
}
