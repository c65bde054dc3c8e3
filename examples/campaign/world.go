package main

// The campaign's world is the examples' simulated world (simworld) with
// a tally of what the fake accepted.

import (
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/examples/internal/simworld"
)

// numberID is the business phone number ID the example sends from.
const numberID = simworld.NumberID

// simStart is where the example's simulated time begins.
var simStart = simworld.Start

// simWorld is a simulated clock, a fake Meta and a client, with a tally.
type simWorld struct {
	*simworld.World
	Tally *tally // what the fake accepted, summed as it went
}

// tally sums up the fake's answers as they come, so that the fake need
// not keep every request of a long run.
type tally struct {
	accepted     int            // messages accepted
	lastTemplate time.Time      // the latest template accepted
	atLast       int            // messages accepted up to and including it
	perTo        map[string]int // if not nil: templates accepted per recipient
}

func (t *tally) add(r cloudapitest.Request) {
	if !r.Accepted {
		return
	}
	t.accepted++
	if r.Type == "template" {
		t.lastTemplate, t.atLast = r.At, t.accepted
		if t.perTo != nil {
			t.perTo[r.To]++
		}
	}
}

// newWorld returns a simWorld whose number sends mps messages per second,
// with the client's extra options.
func newWorld(mps int, opts ...cloudapi.Option) (*simWorld, error) {
	t := &tally{}
	w, err := simworld.NewWithMeta(mps, nil,
		[]cloudapitest.Option{cloudapitest.WithHistory(1000), cloudapitest.WithRequestObserver(t.add)}, opts...)
	if err != nil {
		return nil, err
	}
	return &simWorld{World: w, Tally: t}, nil
}
