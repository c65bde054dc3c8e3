package cloudapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingConn counts the writes that reach the connection.
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	writes int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// opaqueBody is a body net/http does not know, as the write-time check's
// is: it flushes the headers before reading it.
type opaqueBody struct {
	r   io.Reader
	err error // returned by the first read instead of data
}

func (b *opaqueBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	return b.r.Read(p)
}

func (b *opaqueBody) Close() error { return nil }

// coalescingTransport is the Client's default transport, over connections
// whose writes are counted.
func coalescingTransport(t *testing.T) (*http.Transport, func() int) {
	t.Helper()
	var mu sync.Mutex
	var conns []*countingConn
	tr := defaultTransport().(*http.Transport).Clone()
	tr.DialContext = coalesceDial(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc := &countingConn{Conn: c}
		mu.Lock()
		conns = append(conns, cc)
		mu.Unlock()
		return cc, nil
	})
	t.Cleanup(tr.CloseIdleConnections)
	return tr, func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range conns {
			c.mu.Lock()
			n += c.writes
			c.mu.Unlock()
		}
		return n
	}
}

// TestRequestLeavesInOneWrite: a request whose body net/http does not
// know leaves in one write, its headers with its body, and arrives whole.
func TestRequestLeavesInOneWrite(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
	}))
	defer srv.Close()
	tr, writes := coalescingTransport(t)
	for i, body := range []string{`{"to":"1"}`, `{"to":"2"}`, "x\r\n\r\n"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v26.0/1/messages", nil)
		req.Body, req.ContentLength = &opaqueBody{r: strings.NewReader(body)}, int64(len(body))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if n := writes(); n != i+1 {
			t.Errorf("after %d requests, %d writes", i+1, n)
		}
	}
	if strings.Join(got, "|") != `{"to":"1"}|{"to":"2"}|`+"x\r\n\r\n" {
		t.Errorf("bodies received %q", got)
	}
	// A body longer than what is sent with the headers arrives whole.
	long := strings.Repeat("0123456789", 10_000)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v26.0/1/media", nil)
	req.Body, req.ContentLength = &opaqueBody{r: strings.NewReader(long)}, int64(len(long))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(got) != 4 || got[3] != long {
		t.Errorf("a body of %d bytes arrived as %d requests, the last of %d bytes", len(long), len(got), len(got[len(got)-1]))
	}
}

// TestRefusedBodyLeavesNothing: when the body's first read fails (the
// write-time check refused it), no byte of the request reaches the
// server, not even its headers.
func TestRefusedBodyLeavesNothing(t *testing.T) {
	var mu sync.Mutex
	var got []byte
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c) // until the client closes
		mu.Lock()
		got = b
		mu.Unlock()
	}()
	tr, writes := coalescingTransport(t)
	refused := errors.New("refused by the check")
	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v26.0/1/messages", nil)
	req.Body, req.ContentLength = &opaqueBody{err: refused}, 10
	if _, err := tr.RoundTrip(req); !errors.Is(err, refused) {
		t.Errorf("RoundTrip: %v, want the body's error", err)
	}
	tr.CloseIdleConnections()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection stayed open")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 0 || writes() != 0 {
		t.Errorf("the server received %q (%d writes)", got, writes())
	}
}

// TestHeadersOnly: only a bare header block announcing a body is held.
func TestHeadersOnly(t *testing.T) {
	for _, tt := range []struct {
		name, p string
		want    bool
	}{
		{"headers of a body", "POST /v26.0/1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n", true},
		{"with their body", "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", false},
		{"a body ending as headers do", "POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\n\r\n\r\n", false},
		{"no body", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"an empty body", "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", false},
		{"chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", false},
		{"100-continue", "POST / HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n", false},
		{"not a request line", "\x16\x03\x01 \r\nContent-Length: 2\r\n\r\n", false},
		{"a part of headers", "POST / HTTP/1.1\r\nContent-Length: 2\r\n", false},
	} {
		if got := headersOnly([]byte(tt.p)); got != tt.want {
			t.Errorf("%s: headersOnly = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestClosedConnectionHoldsNothing: headers written to a connection
// already closed fail with nothing written, as they would unheld, so
// that net/http retries the request elsewhere (it does when none of a
// request's bytes were written), instead of counting them as sent.
func TestClosedConnectionHoldsNothing(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := &coalesceConn{Conn: a}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	n, err := c.Write([]byte("POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n"))
	if n != 0 || err == nil {
		t.Errorf("Write after Close: %d, %v; want 0 and an error", n, err)
	}
}
