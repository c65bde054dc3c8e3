package main

// The wiring of a simulated world, with public packages only: a
// discrete-event clock (simclock), a fake Meta on that clock
// (cloudapitest), and a wapace client talking to it in memory. Copy it
// into your own module to run a campaign in a second.

import (
	"log/slog"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/simclock"
)

// numberID is the business phone number ID the example sends from.
const numberID = "106540352242922"

// simStart is where the example's simulated time begins.
var simStart = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// simWorld is a simulated clock, a fake Meta and a client.
type simWorld struct {
	Clock  *simclock.Clock
	Meta   *cloudapitest.Server
	Client *cloudapi.Client
	Tally  *tally // what the fake accepted, summed as it went
}

// tally sums up the fake's answers as they come, so that the fake need
// not keep every request of a long run.
type tally struct {
	accepted     int       // messages accepted
	lastTemplate time.Time // the latest template accepted
	atLast       int       // messages accepted up to and including it
}

func (t *tally) add(r cloudapitest.Request) {
	if !r.Accepted {
		return
	}
	t.accepted++
	if r.Type == "template" {
		t.lastTemplate, t.atLast = r.At, t.accepted
	}
}

// newWorld returns a simWorld whose number sends mps messages per second, with the
// client's extra options.
func newWorld(mps int, logger *slog.Logger, opts ...cloudapi.Option) (*simWorld, error) {
	clk := simclock.New(simStart)
	t := &tally{}
	meta := cloudapitest.NewServer(nil, cloudapitest.WithClock(clk), cloudapitest.WithThroughput(mps),
		cloudapitest.WithHistory(1000), cloudapitest.WithRequestObserver(t.add))
	base := []cloudapi.Option{
		cloudapi.WithClock(clk),
		cloudapi.WithHTTPClient(meta.Client()),
		cloudapi.WithBaseURL(cloudapitest.BaseURL),
		cloudapi.WithThroughput(mps),
	}
	if logger != nil {
		base = append(base, cloudapi.WithLogger(logger))
	}
	c, err := cloudapi.New("DEMO_TOKEN", append(base, opts...)...)
	if err != nil {
		return nil, err
	}
	return &simWorld{Clock: clk, Meta: meta, Client: c, Tally: t}, nil
}

// Since returns the simulated time since simStart.
func (w *simWorld) Since() time.Duration { return w.Clock.Since(simStart) }
