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
// only says that the request may have been written).
func (g *gate) ready() error {
	if err := g.check(); err != nil {
		return err
	}
	if g.mark == nil {
		return nil
	}
	g.mu.Lock()
	switch {
	case g.done: // the send gave up meanwhile
		g.mu.Unlock()
		return errGateDone
	case g.marked: // a second body of the request (the transport's retry)
		g.mu.Unlock()
		return nil
	}
	// The check runs again: until it does, the body has not been let go.
	g.checked = time.Time{}
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
	return g.check()
}
