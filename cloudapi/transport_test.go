package cloudapi_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
)

// TestDefaultTransportKeepsConnections: with default options, a sender
// with many requests in flight reuses its connections instead of dialling
// one for most requests (net/http's default transport keeps only 2 idle
// connections per host: at 64 in flight, each round dialled about 62 new
// ones and left as many sockets in TIME_WAIT).
func TestDefaultTransportKeepsConnections(t *testing.T) {
	var dialled atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond) // let the requests overlap
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"messaging_product":"whatsapp","contacts":[{"input":"x","wa_id":"x"}],"messages":[{"id":"wamid.T"}]}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(srv.URL), cloudapi.WithThroughput(10_000)) // the most a Limiter accepts
	if err != nil {
		t.Fatal(err)
	}
	const inFlight = 64
	round := func(r int) {
		var wg sync.WaitGroup
		for g := range inFlight {
			wg.Go(func() {
				if _, err := c.Send(t.Context(), "106540352242922", cloudapi.Text(fmt.Sprintf("+23769%02d%04d", r, g), "hi")); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	round(0)
	first := dialled.Load()
	for r := 1; r <= 3; r++ {
		round(r)
	}
	// The rounds need not be equally concurrent (a round whose first
	// requests end before its last start needs fewer connections), so
	// the bound is on all four: about one round's, not one per request.
	if all := dialled.Load(); all > inFlight+inFlight/8 {
		t.Errorf("%d connections dialled for 4 rounds of %d requests in flight (%d by the first): want about one round's, reused", all, inFlight, first)
	}
}
