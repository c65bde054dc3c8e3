package outbox

import (
	"context"
	"database/sql/driver"
	"sync"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/wapace/wapace/internal/clockwait"
)

// notifyChannel is the Postgres channel the outbox's trigger notifies when
// an item is inserted or leaves the sending state: work for other workers.
const notifyChannel = "wapace_outbox"

// listen, with Postgres, wakes Run whenever another worker (or process)
// enqueues an item or finishes a send, so that a lane handed over between
// workers does not wait for an idle wake. It holds one connection of the
// pool until ctx ends, and returns once its goroutine has ended. A
// listener whose connection fails (terminated, a restart) listens again
// after a backoff on the Outbox's clock, waking Run once it does (for the
// notifications it missed); meanwhile Run keeps its idle wake-ups.
func (r *runner) listen(ctx context.Context) (stop func()) {
	o := r.o
	if !o.d.postgres {
		return func() {}
	}
	lctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		failures := 0
		for lctx.Err() == nil {
			if r.listenOnce(lctx) {
				failures = 0 // it listened: the next failure starts over
			}
			if lctx.Err() != nil {
				return
			}
			failures++
			_ = clockwait.Sleep(lctx, o.cfg.clock, min(runRetryMin<<min(failures-1, 16), runRetryMax))
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// listenOnce listens on one connection until it fails or ctx ends, and
// reports whether it was listening.
func (r *runner) listenOnce(ctx context.Context) (listened bool) {
	conn, err := r.o.db.Conn(ctx)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return nil
		}
		pc := sc.Conn()
		if _, err := pc.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
			return driver.ErrBadConn
		}
		listened = true
		r.signal() // what was notified before this LISTEN was missed
		for {
			if _, err := pc.WaitForNotification(ctx); err != nil {
				// The connection is still listening (or was closed
				// by the cancellation): never reuse it.
				return driver.ErrBadConn
			}
			r.signal()
		}
	})
	return listened
}
