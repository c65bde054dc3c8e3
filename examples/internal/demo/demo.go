// Package demo wires the pieces every example uses: a simulation clock, a
// fake Meta on that clock, and a wapace client talking to it in memory.
package demo

import (
	"log/slog"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/simclock"
)

// From is the business phone number ID the examples send from.
const From = "106540352242922"

// Start is where every example's simulated time begins.
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
	clk := simclock.New(Start)
	meta := cloudapitest.NewServer(nil, cloudapitest.WithClock(clk), cloudapitest.WithThroughput(mps))
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
	return &World{Clock: clk, Meta: meta, Client: c}, nil
}

// Since returns the simulated time since Start.
func (w *World) Since() time.Duration { return w.Clock.Since(Start) }
