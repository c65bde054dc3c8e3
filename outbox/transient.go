package outbox

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/clockwait"
)

// Bounds of Run's backoff after a transient database error: the first
// retry waits runRetryMin, each further one twice as long, up to
// runRetryMax.
const (
	runRetryMin = 50 * time.Millisecond
	runRetryMax = 5 * time.Second
)

// WithRunErrorObserver calls f with each database error Run rides out (a
// lock held too long by another process, a connection the server
// terminated, a server restarting) and how long Run waits before trying
// again. f must not block. Errors that end Run are returned by Run, not
// passed to f.
func WithRunErrorObserver(f func(err error, retryIn time.Duration)) Option {
	return func(c *config) error {
		c.runErrors = f
		return nil
	}
}

// WithLogger logs to l the database errors Run rides out, at level Warn
// (nothing is logged by default), with phone numbers masked.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return optErr("WithLogger(nil)")
		}
		c.log = l
		return nil
	}
}

// transient reports whether err is a database error that waiting can fix:
// SQLite's busy and locked errors (another process holds the write lock
// past the busy timeout), and with Postgres a connection that failed or
// was terminated (pg_terminate_backend, a restart, a failover), a server
// refusing connections for now, serialization failures and deadlocks, and
// a lack of resources (too many connections).
func transient(err error) bool {
	if err == nil {
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED (and their extended codes)
			return true
		}
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		c := pe.Code
		return strings.HasPrefix(c, "08") || // connection exception
			strings.HasPrefix(c, "53") || // insufficient resources
			strings.HasPrefix(c, "57P") || // admin or crash shutdown, cannot connect now
			c == "40001" || c == "40P01" || c == "55P03" // serialization, deadlock, lock not available
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.SafeToRetry(err), pgconn.Timeout(err),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone), errors.Is(err, sql.ErrTxDone),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgconn reports a connection lost mid-exchange in words only.
	s := err.Error()
	return strings.Contains(s, "conn closed") || strings.Contains(s, "connection reset") ||
		strings.Contains(s, "broken pipe") || strings.Contains(s, "unexpected EOF")
}

// rideOut decides what Run does after err: it reports a transient error to
// the observer and the logger and waits the failure's backoff on the
// Outbox's clock (true: try again), or reports that Run must return err
// (false): a permanent error, a closed Outbox, or ctx ended.
func (r *runner) rideOut(ctx context.Context, err error) bool {
	o := r.o
	if ctx.Err() != nil || o.isClosed() || !transient(err) {
		return false
	}
	r.failures++
	d := runRetryMin << min(r.failures-1, 16)
	d = min(d, runRetryMax)
	if f := o.cfg.runErrors; f != nil {
		f(err, d)
	}
	if l := o.cfg.log; l != nil {
		l.Warn("outbox: run: transient database error, retrying", "err", errcodes.Sanitize(err.Error()), "retry_in", d, "failures", r.failures)
	}
	_ = clockwait.Sleep(ctx, o.cfg.clock, d)
	return ctx.Err() == nil && !o.isClosed()
}
