package outbox_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/throughput"
)

// slowMeta answers every request latency after the fake has it: a round
// trip to Meta (100 to 400 ms), on the bubble's clock.
type slowMeta struct {
	rt      http.RoundTripper
	latency time.Duration
}

func (s slowMeta) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.rt.RoundTrip(r)
	if err == nil {
		time.Sleep(s.latency)
	}
	return resp, err
}

// slowClient is newClient with every answer latency late.
func slowClient(t *testing.T, meta *cloudapitest.Server, latency time.Duration, opts ...cloudapi.Option) *cloudapi.Client {
	t.Helper()
	hc := &http.Client{Transport: slowMeta{meta.Client().Transport, latency}}
	c, err := cloudapi.New("TOKEN", append([]cloudapi.Option{cloudapi.WithHTTPClient(hc), cloudapi.WithBaseURL(cloudapitest.BaseURL)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sendingObserver counts the items sending at once, from the recorded
// transitions: most reports the largest count seen.
type sendingObserver struct {
	mu            sync.Mutex
	sending, peak int
}

func (s *sendingObserver) observe(e outbox.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.State {
	case outbox.StateSending:
		s.sending++
		s.peak = max(s.peak, s.sending)
	case outbox.StateQueued:
	default:
		s.sending--
	}
}

func (s *sendingObserver) most() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// acceptedRate is the rate of the fake's acceptances between its first
// and its last.
func acceptedRate(t *testing.T, meta *cloudapitest.Server) float64 {
	t.Helper()
	var at []time.Time
	for _, r := range meta.Requests() {
		if r.Accepted {
			at = append(at, r.At)
		}
	}
	if len(at) < 2 {
		t.Fatalf("%d acceptances", len(at))
	}
	first, last := slices.MinFunc(at, time.Time.Compare), slices.MaxFunc(at, time.Time.Compare)
	return float64(len(at)-1) / last.Sub(first).Seconds()
}

// enqueueCampaign queues n templates from number from, each to its own
// recipient, in EnqueueMany batches of 1,000.
func enqueueCampaign(t *testing.T, o *outbox.Outbox, from string, n int) {
	t.Helper()
	for i := 0; i < n; i += 1000 {
		var msgs []cloudapi.Message
		for j := i; j < min(n, i+1000); j++ {
			msgs = append(msgs, cloudapi.Template(fmt.Sprintf("+2376%08d", j), "winter_sale", "en"))
		}
		res, err := o.EnqueueMany(t.Context(), from, msgs...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
}

// TestUpgradedNumberBusyAtMetaLatency: one number upgraded to 1,000 msg/s,
// Meta answering each request 200 ms after it arrives, default options:
// Run keeps the number at least 95 % busy, so it must keep about 200 sends
// in flight (a fixed 64 sent about 320 msg/s).
func TestUpgradedNumberBusyAtMetaLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const id = "106540352242931"
		meta := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(id, throughput.Upgraded))
		o, _ := openSQLite(t)
		c := slowClient(t, meta, 200*time.Millisecond, cloudapi.WithNumberThroughput(id, throughput.Upgraded))
		const n = 4000
		enqueueCampaign(t, o, id, n)
		runErr, stop := startRun(t.Context(), o, c)
		if err := drainThenStop(t, o, runErr, stop, time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := meta.Accepted(); got != n {
			t.Fatalf("%d accepted, want %d", got, n)
		}
		if k := meta.Count(errcodes.ThroughputLimit) + meta.Count(errcodes.PairRateLimit); k != 0 {
			t.Fatalf("%d refusals", k)
		}
		rate := acceptedRate(t, meta)
		t.Logf("%d templates at %.1f msg/s (%.1f %% of %d)", n, rate, rate/10, throughput.Upgraded)
		if rate < 0.95*throughput.Upgraded {
			t.Errorf("%.1f msg/s, want at least 95 %% of %d", rate, throughput.Upgraded)
		}
	})
}

// TestSmallNumberKeepsFewSends: a number at Meta's default 80 msg/s, Meta
// answering in 200 ms, 1,000 templates queued: Run keeps the number busy
// with the few tens of sends it needs (80 x 0.2 s = 16 on the wire), not
// hundreds of claims waiting for its slots (each one left of unknown
// outcome by a crash).
func TestSmallNumberKeepsFewSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const id = "106540352242931"
		meta := cloudapitest.NewServer(t)
		var obs sendingObserver
		o, _ := openSQLite(t, outbox.WithObserver(obs.observe))
		c := slowClient(t, meta, 200*time.Millisecond)
		const n = 1000
		enqueueCampaign(t, o, id, n)
		runErr, stop := startRun(t.Context(), o, c)
		if err := drainThenStop(t, o, runErr, stop, time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := meta.Accepted(); got != n {
			t.Fatalf("%d accepted, want %d", got, n)
		}
		rate := acceptedRate(t, meta)
		t.Logf("%d templates at %.1f msg/s, at most %d sending at once", n, rate, obs.most())
		if most := obs.most(); most > 48 {
			t.Errorf("%d sends in flight at once, want at most 48 for 80 msg/s at 200 ms", most)
		}
		if rate < 0.95*throughput.Default {
			t.Errorf("%.1f msg/s, want at least 95 %% of %d", rate, throughput.Default)
		}
	})
}
