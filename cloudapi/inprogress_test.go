package cloudapi_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
)

// gateTransport holds each request before handing it to inner until the
// test lets it go.
type gateTransport struct {
	inner   http.RoundTripper
	arrived chan struct{}
	release chan struct{}
}

func (g gateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	g.arrived <- struct{}{}
	<-g.release
	return g.inner.RoundTrip(r)
}

// A send whose key is already in flight in the Client is refused locally
// with ErrInProgress (nothing of it written), a duplicate whose first
// outcome is not known yet; once the first send has ended, a send of the
// key is a duplicate answered with that outcome, not ErrInProgress.
func TestInProgressDuplicate(t *testing.T) {
	srv := cloudapitest.NewServer(t, cloudapitest.WithToken(secretToken))
	g := gateTransport{inner: srv.Client().Transport, arrived: make(chan struct{}), release: make(chan struct{})}
	c, err := cloudapi.New(secretToken, cloudapi.WithBaseURL(cloudapitest.BaseURL), cloudapi.WithHTTPClient(&http.Client{Transport: g}))
	if err != nil {
		t.Fatal(err)
	}
	m := withKey(cloudapi.Text(alice, "once"), "k-1")
	first := make(chan error, 1)
	go func() {
		_, err := c.Send(t.Context(), number, m)
		first <- err
	}()
	<-g.arrived // the first send is in progress, its request held

	_, err = c.Send(t.Context(), number, m)
	var se *cloudapi.SendError
	if !errors.Is(err, cloudapi.ErrInProgress) || !errors.Is(err, cloudapi.ErrDuplicate) || !errors.As(err, &se) || !se.Duplicate ||
		cloudapi.StateOf(err) != cloudapi.StateSubmittedUnknown {
		t.Errorf("send while the first is in progress = %v, want ErrInProgress (a duplicate, outcome unknown)", err)
	}
	close(g.release)
	if err := <-first; err != nil {
		t.Fatalf("first send: %v", err)
	}
	res, err := c.Send(t.Context(), number, m)
	if errors.Is(err, cloudapi.ErrInProgress) || !errors.Is(err, cloudapi.ErrDuplicate) || cloudapi.StateOf(err) != cloudapi.StateAccepted || res == nil {
		t.Errorf("send after the first ended = %+v, %v; want a duplicate of an accepted send", res, err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
