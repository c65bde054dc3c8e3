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
	"github.com/wapace/wapace/outbox"
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

// TestDefaultTransportKeepsARunsConnections: an outbox's Run keeps up to
// outbox.DefaultConcurrency sends in flight; after a pause of the process
// hundreds of them write at once. With default options the Client keeps
// those connections for the next burst instead of closing all but 256 of
// them and dialling again (in the realtime five-numbers test under load,
// 4,117 and 5,414 connections dialled for 10,000 messages, against 928 and
// 848 keeping 1,024: the fake spent about half as much again per message,
// the sender a third).
func TestDefaultTransportKeepsARunsConnections(t *testing.T) {
	const inFlight = outbox.DefaultConcurrency / 2
	var dialled atomic.Int64
	var mu sync.Mutex // protects arrived and release
	arrived, release := 0, make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Hold every request until the whole round is in: each has a
		// connection of its own.
		mu.Lock()
		wait := release
		if arrived++; arrived == inFlight {
			close(release)
			arrived, release = 0, make(chan struct{})
		}
		mu.Unlock()
		select {
		case <-wait:
		case <-time.After(5 * time.Second):
		}
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
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(srv.URL), cloudapi.WithThroughput(10_000))
	if err != nil {
		t.Fatal(err)
	}
	round := func(r int) {
		var wg sync.WaitGroup
		for g := range inFlight {
			wg.Go(func() {
				if _, err := c.Send(t.Context(), "106540352242922", cloudapi.Text(fmt.Sprintf("+2376%d%06d", r, g), "hi")); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	for r := range 3 {
		round(r)
	}
	if all := dialled.Load(); all > inFlight+inFlight/8 {
		t.Errorf("%d connections dialled for 3 rounds of %d requests in flight: want about one round's, kept", all, inFlight)
	}
}
