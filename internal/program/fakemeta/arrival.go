package fakemeta

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Arrival stamps. Meta counts a message when it reaches Meta, whatever
// the load of the machine that sent it. The fake shares that machine: a
// handler stamping with time.Now runs when the fake's goroutine is
// scheduled, and on a loaded machine requests that reached the socket tens
// of milliseconds apart are then stamped together, and counted as a burst
// the sender never made. So on Linux the fake stamps a request with the
// kernel's receive time (SO_TIMESTAMPNS) of the last bytes its body was
// read from; elsewhere, or when the socket option is refused, it stamps
// when its body has been read.

// stamped is a connection that remembers when its latest bytes arrived.
type stamped interface {
	// lastArrival returns the receive time of the latest bytes read, in
	// Unix nanoseconds (0 when unknown).
	lastArrival() int64
}

type connKey struct{}

// withConn is the server's ConnContext: it keeps the connection in the
// context of its requests, for arrivalOf.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if s, ok := c.(stamped); ok {
		return context.WithValue(ctx, connKey{}, s)
	}
	return ctx
}

// arrivalOf returns when r's body arrived, read after its body has been
// read: the kernel's receive time of the latest bytes read from its
// connection, or the zero Time when unknown.
func arrivalOf(r *http.Request) time.Time {
	s, ok := r.Context().Value(connKey{}).(stamped)
	if !ok {
		return time.Time{}
	}
	if ns := s.lastArrival(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// stampAt records the receive time ns in last when it is known.
func stampAt(last *atomic.Int64, ns int64) {
	if ns != 0 {
		last.Store(ns)
	}
}
