package cloudapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/pairlimit"
)

// dropServer is an HTTP/1.1 server on a real socket that answers the
// first request of each connection (keep-alive) and, on the second, reads
// it whole and then drops the connection without an answer: closed
// (FIN), or reset (RST, SO_LINGER 0). It counts the bodies it read.
type dropServer struct {
	ln    net.Listener
	reset bool

	mu     sync.Mutex
	bodies map[string]int
}

func newDropServer(t *testing.T, reset bool) *dropServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dropServer{ln: ln, reset: reset, bodies: map[string]int{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.conn(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *dropServer) conn(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.bodies[string(body)]++
		s.mu.Unlock()
		if n == 2 {
			if tc, ok := c.(*net.TCPConn); ok && s.reset {
				tc.SetLinger(0)
			}
			return // the whole request is in; no answer
		}
		ok := `{"messaging_product":"whatsapp","messages":[{"id":"wamid.D` + fmt.Sprint(n) + `"}]}`
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(ok), ok)
	}
}

func (s *dropServer) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.bodies))
	for k, v := range s.bodies {
		m[k] = v
	}
	return m
}

// TestReview7DroppedConnectionIsNotResent: a server that reads a request
// whole on a reused keep-alive connection, then closes or resets the
// connection without answering, must see that message once: the Client's
// own transport (coalesced header and body writes, write-time check) does
// not send a POST again (net/http retries only requests it deems
// replayable, and the Client sets no Idempotency-Key header), nor does
// the Client's retry policy, and the outcome is submitted_unknown. Held
// at 070f5ea.
func TestReview7DroppedConnectionIsNotResent(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(fmt.Sprintf("reset=%v", reset), func(t *testing.T) {
			srv := newDropServer(t, reset)
			c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL("http://"+srv.ln.Addr().String()), cloudapi.WithThroughput(80),
				cloudapi.WithPairLimiter(pairlimit.New(pairlimit.Policy{Interval: 10 * time.Millisecond, Burst: 45})))
			if err != nil {
				t.Fatal(err)
			}
			const rounds = 20 // each round: one answered send, one dropped
			unknown := 0
			for i := range 2 * rounds {
				m := cloudapi.Text(fmt.Sprintf("+1555000%04d", i), fmt.Sprintf("drop %d", i))
				m.IdempotencyKey = fmt.Sprintf("r7-drop-%v-%d", reset, i)
				_, err := c.Send(t.Context(), "100", m)
				switch st := cloudapi.StateOf(err); {
				case err == nil:
				case st == cloudapi.StateSubmittedUnknown:
					unknown++
				default:
					t.Fatalf("send %d: %v (state %v)", i, err, st)
				}
			}
			got := srv.counts()
			for i := range 2 * rounds {
				body := fmt.Sprintf("drop %d", i)
				n := 0
				for b, k := range got {
					if strings.Contains(b, `"`+body+`"`) {
						n += k
					}
				}
				if n != 1 {
					t.Errorf("message %q reached the server %d times, want 1", body, n)
				}
			}
			if unknown != rounds {
				t.Errorf("%d sends ended submitted_unknown, want %d (every dropped one)", unknown, rounds)
			}
		})
	}
}
