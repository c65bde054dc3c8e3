package cloudapi

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"sync"
)

// One write per request. A request's body is read through the write-time
// check (pace.go), a reader net/http does not know, so over HTTP/1 it
// flushes the headers to the connection on their own before it reads the
// body ("in case the server needs the headers early", net/http's
// transfer.go): two writes, two segments, and a server that wakes twice
// for each message. Neither peer gains from it (the fake and Meta act on a
// message once its body is in), and at 1,000 messages a second the write
// costs the sender about 15 µs a message on loopback. So the connections
// the Client's own transport dials (without WithHTTPClient) hold back a
// write that is exactly the header block of a request announcing a body
// of known length, and send it with the body's first bytes; if the
// connection closes first (the check refused the body), nothing of the
// request leaves. Anything else (TLS records, a request whose body was
// sent with its headers, one that waits for 100-continue) is written as
// it comes.

// coalesceDial wraps dial so that its connections coalesce a request's
// headers with its body.
func coalesceDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &coalesceConn{Conn: c}, nil
	}
}

// maxHeld is the largest header block held back.
const maxHeld = 8 << 10

// coalesceConn is a connection that holds back a request's header block
// until the next write (see above).
type coalesceConn struct {
	net.Conn
	mu   sync.Mutex // protects held: the transport writes from one goroutine, and may close from another
	held []byte     // a header block not yet written, or empty
}

func (c *coalesceConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if len(c.held) == 0 {
		if !headersOnly(p) {
			c.mu.Unlock()
			return c.Conn.Write(p)
		}
		c.held = append(c.held, p...)
		c.mu.Unlock()
		return len(p), nil
	}
	held := len(c.held)
	buf := append(c.held, p...)
	c.held = buf[:0]
	c.mu.Unlock()
	n, err := c.Conn.Write(buf)
	return max(n-held, 0), err
}

// Close drops a held header block: its body never came.
func (c *coalesceConn) Close() error {
	c.mu.Lock()
	c.held = c.held[:0]
	c.mu.Unlock()
	return c.Conn.Close()
}

// headersOnly reports whether p is exactly the header block of an HTTP/1
// request that announces a body of known, non-zero length, and does not
// wait for 100-continue before sending it.
func headersOnly(p []byte) bool {
	if len(p) > maxHeld || bytes.Index(p, []byte("\r\n\r\n")) != len(p)-4 {
		return false
	}
	method, _, ok := bytes.Cut(p, []byte(" "))
	if !ok || len(method) == 0 {
		return false
	}
	for _, b := range method {
		if b < 'A' || b > 'Z' {
			return false
		}
	}
	_, rest, ok := bytes.Cut(p, []byte("\r\nContent-Length: "))
	if !ok {
		return false
	}
	v, _, _ := bytes.Cut(rest, []byte("\r\n"))
	n, err := strconv.ParseInt(string(v), 10, 64)
	return err == nil && n > 0 && !bytes.Contains(p, []byte("\r\nExpect:")) && !bytes.Contains(p, []byte("\r\nTransfer-Encoding:"))
}
