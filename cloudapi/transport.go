package cloudapi

import (
	"bytes"
	"context"
	"io"
	"net"
	"slices"
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

// maxHeld is the largest header block held back, and maxBodyWith the
// most of a body sent with it.
const (
	maxHeld     = 8 << 10
	maxBodyWith = 64 << 10
)

// coalesceConn is a connection that holds back a request's header block
// until the next write (see above).
type coalesceConn struct {
	net.Conn
	mu     sync.Mutex // protects the fields below: the transport writes from one goroutine, and may close from another
	held   []byte     // a header block not yet written, or empty
	closed bool       // Close was called
}

func (c *coalesceConn) Write(p []byte) (int, error) {
	held := c.take()
	if len(held) == 0 {
		// A closed connection holds nothing: the write fails, with
		// nothing written, as it would have failed unheld. (net/http
		// retries a request on another connection when none of its bytes
		// were written: a header block held back, then lost, would count
		// as written.)
		if headersOnly(p) && !c.isClosed() {
			c.hold(append(held, p...))
			return len(p), nil
		}
		c.hold(held)
		return c.Conn.Write(p)
	}
	n := len(held)
	buf := append(held, p...)
	w, err := c.Conn.Write(buf)
	c.hold(buf[:0])
	return max(w-n, 0), err
}

// ReadFrom writes what r reads; a held header block leaves with the
// first bytes r reads, up to maxBodyWith of them, read into the same
// buffer. The transport copies a request's body with it.
func (c *coalesceConn) ReadFrom(r io.Reader) (int64, error) {
	buf := c.take()
	n0 := len(buf)
	if n0 == 0 {
		c.hold(buf)
		return io.Copy(c.Conn, r)
	}
	var rerr error
	for rerr == nil && len(buf)-n0 < maxBodyWith {
		buf = slices.Grow(buf, 512)
		var m int
		m, rerr = r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
	}
	if rerr == io.EOF {
		rerr = nil
	}
	if len(buf) == n0 && rerr != nil {
		// Nothing of the body came: the headers stay back, and are
		// dropped when the transport closes the connection.
		c.hold(buf)
		return 0, rerr
	}
	w, err := c.Conn.Write(buf)
	c.hold(buf[:0])
	n := int64(max(w-n0, 0))
	switch {
	case err != nil:
		return n, err
	case rerr != nil:
		return n, rerr
	case len(buf)-n0 < maxBodyWith:
		return n, nil
	}
	more, err := io.Copy(c.Conn, r)
	return n + more, err
}

// take removes the held bytes (nil or empty when there are none) and
// returns them.
func (c *coalesceConn) take() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.held
	c.held = nil
	return b
}

// hold keeps b as the held bytes (empty: none, its buffer kept for the
// next request).
func (c *coalesceConn) hold(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = b
}

func (c *coalesceConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close drops a held header block: its body never came.
func (c *coalesceConn) Close() error {
	c.mu.Lock()
	c.held = c.held[:0]
	c.closed = true
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
