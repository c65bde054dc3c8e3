// Package simworld wires the examples' simulated world, with public
// packages only: a discrete-event clock (simclock), a fake Meta on that
// clock (cloudapitest), and a wapace client talking to it in memory. Copy
// it into your own module to run a campaign in a second.
package simworld

import (
	"log/slog"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/simclock"
)

// NumberID is the business phone number ID the examples send from.
const NumberID = "106540352242922"

// Start is where the examples' simulated time begins.
var Start = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// World is a simulated clock, a fake Meta and a client.
type World struct {
	Clock  *simclock.Clock
	Meta   *cloudapitest.Server
	Client *cloudapi.Client
}

// New returns a World whose number sends mps messages per second, with the
// client's extra options.
func New(mps int, logger *slog.Logger, opts ...cloudapi.Option) (*World, error) {
	return NewWithMeta(mps, logger, nil, opts...)
}

// NewWithMeta is New with the fake Meta's extra options.
func NewWithMeta(mps int, logger *slog.Logger, meta []cloudapitest.Option, opts ...cloudapi.Option) (*World, error) {
	clk := simclock.New(Start)
	fake := cloudapitest.NewServer(nil, append([]cloudapitest.Option{cloudapitest.WithClock(clk), cloudapitest.WithThroughput(mps)}, meta...)...)
	base := []cloudapi.Option{
		cloudapi.WithClock(clk),
		cloudapi.WithHTTPClient(fake.Client()),
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
	return &World{Clock: clk, Meta: fake, Client: c}, nil
}

// Since returns the simulated time since Start.
func (w *World) Since() time.Duration { return w.Clock.Since(Start) }
