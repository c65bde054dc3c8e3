//go:build linux

package fakemeta

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestArrivalIsWhenTheBytesCame: a request read 300 ms after it reached
// the socket (a busy server) is stamped when it reached the socket, not
// when the handler got round to it.
func TestArrivalIsWhenTheBytesCame(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ arrival, read time.Time }
	got := make(chan seen, 1)
	srv := &http.Server{ConnContext: withConn, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // the server is busy
		_, _ = io.ReadAll(r.Body)
		got <- seen{arrivalOf(r), time.Now()}
	})}
	go func() { _ = srv.Serve(stampListener(ln)) }()
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	post := func() seen {
		resp, err := c.Post("http://"+ln.Addr().String(), "application/json", strings.NewReader(`{"x":1}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return <-got
	}
	// The kernel turns receive stamps on a little after the first socket
	// asks: the first request may go unstamped.
	post()
	sent := time.Now()
	s := post()
	if s.arrival.IsZero() {
		t.Fatal("no kernel receive time")
	}
	if s.arrival.Before(sent) || s.arrival.After(sent.Add(150*time.Millisecond)) {
		t.Errorf("stamped %v after the send, want when the bytes came (the handler read them %v after)",
			s.arrival.Sub(sent), s.read.Sub(sent))
	}
}
