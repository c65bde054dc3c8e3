package cloudapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/clocktest"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/throughput"
)

// TestAStepOfTheWallClockOnTheWire: 480 sends queued at 80 msg/s over
// loopback HTTP, while the system's wall clock is stepped forward by 2 s
// two seconds in, and back by 5 s two seconds later (clocktest.Stepped:
// the Client reads the stepped clock; timers run on the monotonic one, as
// a step leaves them). Every second of writes holds at most 80, and no
// step holds the queue: no gap between writes reaches 3 s (where the
// process never stalled for a second: clocktest.Watch). A step of the
// wall clock is what NTP does to a machine whose clock is off (a virtual
// machine just started, say). When the pacing kept the wall clock's
// instants, the step back held every send for 5 s here; a step forward
// emptied the number's window of writes (throughput's
// TestAStepOfTheWallClockMovesNoSlot), which CI met once as 128 writes in
// a second after a cut to 80 msg/s (TestReview8CutOnTheWallClock).
func TestAStepOfTheWallClockOnTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("6 s of queue on the real clock")
	}
	const n = 480
	srv := cloudapitest.NewServer(t)
	inner := &http.Transport{MaxIdleConnsPerHost: 256}
	t.Cleanup(inner.CloseIdleConnections)
	stamps := &writeStamps{inner: inner}
	clk := clocktest.NewStepped()
	c, err := cloudapi.New(secretToken, cloudapi.WithBaseURL(srv.URL()), cloudapi.WithClock(clk),
		cloudapi.WithNumberThroughput(number, throughput.Default), cloudapi.WithHTTPClient(&http.Client{Transport: stamps}))
	if err != nil {
		t.Fatal(err)
	}
	watch := clocktest.Watch(t)
	stop := make(chan struct{})
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		for _, s := range []time.Duration{2 * time.Second, -5 * time.Second} {
			select {
			case <-time.After(2 * time.Second):
				clk.Step(s)
			case <-stop:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := c.Send(t.Context(), number, cloudapi.Text("+23769"+fmt.Sprintf("%07d", i), "hi")); err != nil {
				t.Errorf("send %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-stepped

	at := slices.Clone(stamps.at)
	if len(at) != n || srv.Accepted() != n {
		t.Fatalf("%d writes stamped, %d accepted, want %d", len(at), srv.Accepted(), n)
	}
	most, from := mostInAClosedSecond(at, time.Time{})
	var gap time.Duration
	for i := 1; i < len(at); i++ {
		gap = max(gap, at[i].Sub(at[i-1]))
	}
	t.Logf("%d writes in %v; most in a second %d (from +%v); longest gap %v", n, at[n-1].Sub(at[0]).Round(time.Millisecond),
		most, from.Sub(at[0]).Round(time.Millisecond), gap.Round(time.Millisecond))
	if most > throughput.Default {
		t.Errorf("%d writes in the second from +%v, at %d msg/s", most, from.Sub(at[0]), throughput.Default)
	}
	switch stall, _ := watch(); {
	case stall > time.Second:
		t.Logf("the process stalled for %v: the gap bar does not apply", stall)
	case gap >= 3*time.Second:
		t.Errorf("a gap of %v between two writes: a step held the queue", gap)
	}
}

// TestAdmissionAfterAStepOfTheWallClock: what a Client says of the next
// admission keeps its meaning after a step of the wall clock, on the
// monotonic clock and on the wall clock alone (the outbox stores the
// instant as a hold in its database and compares it with deadlines read
// back): the pair's debt after a send stays 6.25 s away, and a call
// budget's refusal hold of 10 s is not hidden behind a number's hold of
// 1 s.
func TestAdmissionAfterAStepOfTheWallClock(t *testing.T) {
	const from, to = "106540352242922", "+15550000009"
	for _, step := range []time.Duration{0, -time.Minute, time.Minute} {
		clk := clocktest.NewStepped()
		srv := cloudapitest.NewServer(t)
		budget := throughput.NewBudget(5000, throughput.WithClock(clk))
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL),
			cloudapi.WithClock(clk), cloudapi.WithBudget(budget))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Send(t.Context(), from, cloudapi.Text(to, "hi")); err != nil {
			t.Fatal(err)
		}
		clk.Step(step)
		now := clk.Now()
		a, err := c.Admission(now, from, to, 1)
		if err != nil {
			t.Fatal(err)
		}
		owed := pairlimit.Meta.Interval + pairlimit.DefaultMargin
		if d := a.At.Sub(now); d < owed-100*time.Millisecond || d > owed {
			t.Errorf("step %v: the pair's next message %v away, want about %v", step, d, owed)
		}
		if d := time.Duration(a.At.UnixNano() - now.UnixNano()); d < owed-100*time.Millisecond || d > owed {
			t.Errorf("step %v: on the wall clock the pair's next message is %v away, want about %v", step, d, owed)
		}

		budget.Hold(now, 10*time.Second, 10*time.Second) // Meta refused a call (80007)
		c.Number(from).Throttled(now, time.Second, 30*time.Second)
		a, err = c.Admission(now, from, "", 1)
		if err != nil {
			t.Fatal(err)
		}
		if d := a.At.Sub(now); d < 10*time.Second-100*time.Millisecond || a.Limit != errcodes.HoldApp {
			t.Errorf("step %v: admitted %v from now by %v, want the budget's 10 s", step, d, a.Limit)
		}
	}
}
