package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestWebhookServerLimits: issue 23 item 9. The webhook server set only
// ReadHeaderTimeout: 50 clients trickling a body at 1 byte/s held their
// connections for 25 s and more. It sets read, write and idle timeouts and
// a header cap.
func TestWebhookServerLimits(t *testing.T) {
	srv := webhookServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 ||
		srv.MaxHeaderBytes <= 0 || srv.MaxHeaderBytes > 1<<20 {
		t.Fatalf("server limits %v %v %v %v %d: want every one set", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	if srv.ReadTimeout > time.Minute {
		t.Errorf("ReadTimeout %v: a trickling body holds its connection that long", srv.ReadTimeout)
	}
}

// TestTricklingClientsAreCut: clients sending a body at 1 byte every
// 100 ms are disconnected once the read timeout passes (shortened here),
// long before their body would end. Real sockets.
func TestTricklingClientsAreCut(t *testing.T) {
	srv := webhookServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	srv.ReadTimeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	const clients = 20
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			// The body would take 100 s to arrive; the test gives up
			// after 15 s (the timeout is 300 ms).
			fmt.Fprintf(c, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
			stop := time.Now().Add(15 * time.Second)
			for time.Now().Before(stop) {
				if _, err := c.Write([]byte("x")); err != nil {
					return // cut
				}
				c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				var b [512]byte
				if _, err := c.Read(b[:]); err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						continue // nothing yet: still connected
					}
					return // closed (or answered): cut
				}
				return
			}
			t.Error("a trickling client kept its connection for 15 s")
		})
	}
	wg.Wait()
}
