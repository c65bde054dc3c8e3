// Command forensics reads a per-message send log, JSON lines as the
// cloudapi client's logger writes them, finds every 131056 and prints the
// burst that caused it, using pairlimit.Replay: the refused message is
// usually the victim, minutes after the burst that spent the quota.
//
//	go run ./examples/forensics -log sends.jsonl
//
// Without -log it first writes a demo log: a sender whose pair limiter was
// set far too loose sends a 20-bubble reply, then an ordinary message 100 s
// later. Time is simulated.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/examples/internal/simworld"
	"github.com/wapace/wapace/internal/program/sendlog"
	"github.com/wapace/wapace/pairlimit"
)

func main() {
	path := flag.String("log", "", "a JSON-lines send log (default: write and read a demo log)")
	flag.Parse()
	var in io.Reader
	if *path != "" {
		f, err := os.Open(*path)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		in = f
	} else {
		in = demoLog()
	}
	if err := analyse(in, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// analyse groups the attempts by pair and replays each pair that met a
// 131056 through Meta's rule.
func analyse(in io.Reader, out io.Writer) error {
	l, err := sendlog.Read(in, nil)
	if err != nil {
		return err
	}
	rs := l.Refusals()
	for _, r := range rs {
		a, v := r.Attempt, r.Verdict
		fmt.Fprintf(out, "131056 for %s (pair %s) at %s, message %s\n", a.To, r.Pair, a.At.Format(time.TimeOnly), a.Key)
		if v.Accepted {
			fmt.Fprintf(out, "  the log alone does not explain it: by this log the pair owed nothing (another sender on the number?)\n")
			continue
		}
		fmt.Fprintf(out, "  victim of a burst of %d that began at %s (%v earlier); the pair still owed %v\n",
			v.BurstLen, v.BurstStart.Format(time.TimeOnly), a.At.Sub(v.BurstStart).Round(10*time.Millisecond), v.Debt.Round(10*time.Millisecond))
		fmt.Fprintf(out, "  fix: after a burst of n, hold the pair n x 6 s (pairlimit does), or send fewer bubbles\n")
	}
	fmt.Fprintf(out, "%d attempts read, %d pairs, %d 131056 explained\n", l.Attempts(), len(l.ByPair), len(rs))
	return nil
}

// demoLog runs a sender whose pair limiter is far too loose and returns
// what its logger wrote.
func demoLog() io.Reader {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	w, err := simworld.New(80, logger)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Meta.Close()
	loose := pairlimit.New(pairlimit.Policy{Interval: time.Millisecond, Burst: 45, BurstWindow: 6 * time.Second},
		pairlimit.WithClock(w.Clock), pairlimit.WithMargin(0))
	c, err := cloudapi.New("DEMO_TOKEN", cloudapi.WithClock(w.Clock), cloudapi.WithHTTPClient(w.Meta.Client()),
		cloudapi.WithBaseURL("http://cloudapitest.invalid"), cloudapi.WithLogger(logger),
		cloudapi.WithPairLimiter(loose), cloudapi.WithRetry(backoff.Meta, 1))
	if err != nil {
		log.Fatal(err)
	}
	const user = "+237 690 00 00 01"
	w.Clock.Run(func() {
		ctx := context.Background()
		bubbles := make([]cloudapi.Message, 20)
		for i := range bubbles {
			bubbles[i] = cloudapi.Text(user, fmt.Sprintf("Menu item %d", i+1))
		}
		if _, err := c.SendBurst(ctx, simworld.NumberID, bubbles...); err != nil {
			log.Fatal(err)
		}
		if _, err := c.Send(ctx, simworld.NumberID, cloudapi.Text("+237 690 00 00 02", "Unrelated user: fine")); err != nil {
			log.Fatal(err)
		}
		w.Clock.Sleep(100 * time.Second)
		if _, err := c.Send(ctx, simworld.NumberID, cloudapi.Text(user, "Anything else?")); err == nil {
			log.Fatal("the demo expected a 131056")
		}
	})
	return &buf
}
