package outbox

import (
	"context"
	"database/sql/driver"
	"sync"

	"github.com/jackc/pgx/v5/stdlib"
)

// notifyChannel is the Postgres channel the outbox's trigger notifies when
// an item is inserted or leaves the sending state: work for other workers.
const notifyChannel = "wapace_outbox"

// listen, with Postgres, wakes Run whenever another worker (or process)
// enqueues an item or finishes a send, so that a lane handed over between
// workers does not wait for an idle wake. It holds one connection of the
// pool until ctx ends, and returns once its goroutine has ended. A
// listener that fails leaves Run on its idle wake-ups.
func (r *runner) listen(ctx context.Context) (stop func()) {
	o := r.o
	if !o.d.postgres {
		return func() {}
	}
	lctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		conn, err := o.db.Conn(lctx)
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.Raw(func(dc any) error {
			sc, ok := dc.(*stdlib.Conn)
			if !ok {
				return nil
			}
			pc := sc.Conn()
			if _, err := pc.Exec(lctx, "LISTEN "+notifyChannel); err != nil {
				return driver.ErrBadConn
			}
			for {
				if _, err := pc.WaitForNotification(lctx); err != nil {
					// The connection is still listening (or was closed
					// by the cancellation): never reuse it.
					return driver.ErrBadConn
				}
				r.signal()
			}
		})
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
