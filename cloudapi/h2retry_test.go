package cloudapi_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/pairlimit"
)

// net/http's HTTP/2 transport sends a POST again by itself when the
// server resets its stream with PROTOCOL_ERROR (http2canRetryError:
// "golang/go#47635"), even after the whole body was written, as long as
// the request has a GetBody, which the Client's requests have (the gate's
// getBody). Until the gate refused a second body once one had been let go
// (found by review 7), the same message reached the server twice on one
// Send, and the Client reported it accepted. Meta speaks HTTP/2 over
// TLS, and the Client's own transport (a clone of
// http.DefaultTransport, ForceAttemptHTTP2) negotiates it.
//
// h2ResetOnce is a minimal HTTP/2 server over TLS: it reads each request
// whole, answers the first complete request with RST_STREAM
// PROTOCOL_ERROR (after it has the whole body: the server may have acted
// on it), and every later one with 200 and a message ID. It counts the
// bodies it received.
type h2ResetOnce struct {
	ln net.Listener

	mu     sync.Mutex
	bodies []string
}

func newH2ResetOnce(t *testing.T) (*h2ResetOnce, *x509.Certificate) {
	t.Helper()
	// httptest's certificate (for 127.0.0.1), the same in every process.
	hs := httptest.NewUnstartedServer(http.NotFoundHandler())
	hs.EnableHTTP2 = true
	hs.StartTLS()
	certs := hs.TLS.Certificates
	cert := hs.Certificate()
	hs.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: certs, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &h2ResetOnce{ln: ln}
	go s.serve()
	t.Cleanup(func() { ln.Close() })
	return s, cert
}

func (s *h2ResetOnce) URL() string { return "https://" + s.ln.Addr().String() }

func (s *h2ResetOnce) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

func (s *h2ResetOnce) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.conn(c)
	}
}

// HTTP/2 frame types and flags (RFC 9113).
const (
	h2Data, h2Headers, h2RST, h2Settings, h2Ping = 0, 1, 3, 4, 6
	h2EndStream, h2EndHeaders, h2Ack             = 0x1, 0x4, 0x1
	h2ProtocolError                              = 0x1
)

func writeFrame(w io.Writer, typ, flags byte, stream uint32, payload []byte) error {
	h := make([]byte, 9, 9+len(payload))
	h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:], stream)
	_, err := w.Write(append(h, payload...))
	return err
}

func (s *h2ResetOnce) conn(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	preface := make([]byte, 24)
	if _, err := io.ReadFull(r, preface); err != nil {
		return
	}
	if writeFrame(c, h2Settings, 0, 0, nil) != nil {
		return
	}
	bodies := map[uint32][]byte{}
	for {
		var h [9]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return
		}
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		typ, flags, stream := h[3], h[4], binary.BigEndian.Uint32(h[5:])&0x7fffffff
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return
		}
		switch typ {
		case h2Settings:
			if flags&h2Ack == 0 && writeFrame(c, h2Settings, h2Ack, 0, nil) != nil {
				return
			}
		case h2Ping:
			if flags&h2Ack == 0 && writeFrame(c, h2Ping, h2Ack, 0, payload) != nil {
				return
			}
		case h2Headers:
			bodies[stream] = []byte{}
		case h2Data:
			bodies[stream] = append(bodies[stream], payload...)
			if flags&h2EndStream == 0 {
				continue
			}
			s.mu.Lock()
			s.bodies = append(s.bodies, string(bodies[stream]))
			first := len(s.bodies) == 1
			s.mu.Unlock()
			delete(bodies, stream)
			if first {
				// The whole request is in: reset it as a proxy in front of
				// Meta might, after passing it on.
				code := binary.BigEndian.AppendUint32(nil, h2ProtocolError)
				if writeFrame(c, h2RST, 0, stream, code) != nil {
					return
				}
				continue
			}
			// HPACK: indexed field 8 of the static table is ":status: 200".
			if writeFrame(c, h2Headers, h2EndHeaders, stream, []byte{0x88}) != nil {
				return
			}
			ok := `{"messaging_product":"whatsapp","contacts":[{"input":"15550000001","wa_id":"15550000001"}],"messages":[{"id":"wamid.R7"}]}`
			if writeFrame(c, h2Data, h2EndStream, stream, []byte(ok)) != nil {
				return
			}
		}
	}
}

// sendOnceOverH2 sends one message through c to srv and checks that srv
// received it once.
func sendOnceOverH2(t *testing.T, srv *h2ResetOnce, c *cloudapi.Client) {
	t.Helper()
	m := cloudapi.Text("+15550000001", "hello once")
	m.IdempotencyKey = "r7-h2-1"
	res, err := c.Send(t.Context(), "100", m)
	got := srv.received()
	t.Logf("Send: %v, %v; state %v; the server received %d bodies", res, err, cloudapi.StateOf(err), len(got))
	if len(got) != 1 {
		t.Errorf("one Send reached the server %d times (want 1): net/http resent the POST after its body was written", len(got))
	}
	if len(got) == 1 && err == nil {
		t.Errorf("the only request was reset after its body arrived, yet Send reports it accepted")
	}
	if len(got) == 1 && cloudapi.StateOf(err) != cloudapi.StateSubmittedUnknown {
		t.Errorf("state %v, want submitted_unknown (the body arrived: Meta may have acted on it)", cloudapi.StateOf(err))
	}
}

func r7Client(t *testing.T, base string, opts ...cloudapi.Option) *cloudapi.Client {
	t.Helper()
	opts = append([]cloudapi.Option{cloudapi.WithBaseURL(base), cloudapi.WithThroughput(80),
		cloudapi.WithPairLimiter(pairlimit.New(pairlimit.Policy{Interval: 10 * time.Millisecond, Burst: 45}))}, opts...)
	c, err := cloudapi.New("TOKEN", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestH2ResetIsNotResent: a stream reset with PROTOCOL_ERROR after
// the body arrived must not make the Client's transport send the message
// again, and the outcome is unknown. At 070f5ea the server received the
// message twice.
func TestH2ResetIsNotResent(t *testing.T) {
	if os.Getenv("WAPACE_H2_CHILD") == "1" {
		// The Client's own transport, trusting httptest's certificate
		// through SSL_CERT_FILE (read once per process: hence the child).
		srv, _ := newH2ResetOnce(t)
		sendOnceOverH2(t, srv, r7Client(t, srv.URL()))
		return
	}
	t.Run("own transport", func(t *testing.T) {
		_, cert := newH2ResetOnce(t)
		pemFile := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestH2ResetIsNotResent$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "WAPACE_H2_CHILD=1", "SSL_CERT_FILE="+pemFile, "SSL_CERT_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Errorf("the child failed")
		} else if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a given HTTP/2 transport", func(t *testing.T) {
		srv, cert := newH2ResetOnce(t)
		pool := x509.NewCertPool()
		pool.AddCert(cert)
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		tr.ForceAttemptHTTP2 = true
		t.Cleanup(tr.CloseIdleConnections)
		sendOnceOverH2(t, srv, r7Client(t, srv.URL(), cloudapi.WithHTTPClient(&http.Client{Transport: tr})))
	})
}
