package cloudapi

import "time"

// ready is the gate's work on the first read of a request body: the
// write-time check (check), then, the first time the check lets the body
// go, the send's write mark (internal/writemark: the outbox commits its
// durable "about to write" mark there) and the check once more, since the
// mark took time. The body is written only if ready returns nil, so a
// message whose mark did not return nil is never written: a mark that
// fails aborts the request as a refused check does (not submitted, no
// byte of the body left). (The transport may have sent the request's
// headers already, as it does for any body it cannot size in memory: Meta
// cannot act on a message without its body.)
//
// The mark comes after the last check that found the connection and the
// slot ready, so that a message waiting out a hold or a new slot is not
// marked yet; a message marked and then given up by the second check is
// not submitted, which its sender records as it would any other (the mark
// only says that the request may have been written). A message whose
// second check sends it to wait outside the request (errWaitOutside)
// keeps its mark: the gate of its new request does not make it again.
//
// Last, right before the body is let go, the send's fence (if any) may
// still refuse it: the outbox's says whether the claim's lease, as last
// renewed, has a margin left, so that a worker paused or stalled past its
// lease, in a wait of the check or anywhere before, writes nothing.
func (g *gate) ready() error {
	if err := g.check(); err != nil {
		return err
	}
	if g.mark == nil {
		return g.fenced()
	}
	g.mu.Lock()
	switch {
	case g.done: // the send gave up meanwhile
		g.mu.Unlock()
		return errGateDone
	case g.marked: // a second body, after a check that refused the first
		g.mu.Unlock()
		return g.fenced()
	}
	// The check runs again: until it does, the body has not been let go.
	// The window's leave is given back and taken again by that check: a
	// leave held through the mark would count the write for the mark's
	// time too, and with marks of 5 ms or more at 1,000 msg/s the window
	// would be full in steady state.
	g.checked = time.Time{}
	if g.ticket != nil {
		g.ticket.Drop()
		g.ticket = nil
	}
	err := g.mark(g.s.ctx, g.key)
	if err != nil {
		g.aborted = err
	} else {
		g.marked = true
	}
	g.mu.Unlock()
	if err != nil {
		return err
	}
	if err := g.check(); err != nil {
		return err
	}
	return g.fenced()
}

// fenced runs the send's fence (internal/writemark) right before the body
// is let go, after every check and however long they waited: a refusal
// aborts the request as a refused check does (not submitted, no byte of
// the body left). Once it has let a body go, the gate never lets another
// go (see getBody).
func (g *gate) fenced() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return errGateDone
	}
	if g.fence != nil {
		if err := g.fence(g.key); err != nil {
			g.aborted, g.checked = err, time.Time{}
			return err
		}
	}
	g.released = true
	return nil
}
