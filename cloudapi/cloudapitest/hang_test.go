package cloudapitest_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"go.uber.org/goleak"
)

func postHang(c *http.Client, base string) error {
	body := `{"messaging_product":"whatsapp","to":"+237690000001","type":"text","text":{"body":"x"}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/v23.0/1234/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// A scripted hang over a real socket never answers: the client times out,
// where the connection used to be closed at once, like a reset.
func TestHangOverURLTimesOut(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := cloudapitest.NewServer(nil, cloudapitest.WithToken("tok"))
	defer s.Close()
	s.Script(cloudapitest.Failure{Hang: true})
	c := &http.Client{Timeout: 300 * time.Millisecond}
	defer c.CloseIdleConnections()
	start := time.Now()
	err := postHang(c, s.URL())
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("after %v: err = %v; want a timeout", time.Since(start), err)
	}
	if s.Accepted() != 1 {
		t.Errorf("accepted %d; want the hung message accepted", s.Accepted())
	}
}

// Close releases a connection a hang holds: the client gets an error, and
// no goroutine is left behind.
func TestCloseReleasesHang(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := cloudapitest.NewServer(nil, cloudapitest.WithToken("tok"))
	s.Script(cloudapitest.Failure{Hang: true})
	c := &http.Client{}
	defer c.CloseIdleConnections()
	errc := make(chan error, 1)
	base := s.URL()
	go func() { errc <- postHang(c, base) }()
	for s.Accepted() == 0 {
		select {
		case err := <-errc:
			t.Fatalf("answered before Close: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	select {
	case err := <-errc:
		t.Fatalf("answered before Close: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	s.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("hung request answered after Close; want an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close left the hung request waiting")
	}
}
