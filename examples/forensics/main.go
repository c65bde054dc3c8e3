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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/examples/internal/simworld"
	"github.com/wapace/wapace/pairlimit"
)

// line is the part of a log line forensics needs.
type line struct {
	Msg   string    `json:"msg"`
	At    time.Time `json:"at"`
	Pair  string    `json:"pair"`
	To    string    `json:"to"`
	State string    `json:"state"`
	Code  int       `json:"code"`
	Key   string    `json:"key"`
}

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
	byPair := map[string][]line{}
	var order []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("line %d: not JSON: %w", n, err)
		}
		if l.Msg != "wapace attempt" || l.Pair == "" {
			continue
		}
		if _, ok := byPair[l.Pair]; !ok {
			order = append(order, l.Pair)
		}
		byPair[l.Pair] = append(byPair[l.Pair], l)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	found := 0
	for _, p := range order {
		attempts := byPair[p]
		if !slices.ContainsFunc(attempts, func(l line) bool { return l.Code == 131056 }) {
			continue
		}
		sends := make([]time.Time, len(attempts))
		for i, a := range attempts {
			sends[i] = a.At
		}
		verdicts := pairlimit.Replay(pairlimit.Meta, sends)
		for i, a := range attempts {
			if a.Code != 131056 {
				continue
			}
			found++
			v := verdicts[i]
			fmt.Fprintf(out, "131056 for %s (pair %s) at %s, message %s\n", a.To, p, a.At.Format(time.TimeOnly), a.Key)
			if v.Accepted {
				fmt.Fprintf(out, "  the log alone does not explain it: by this log the pair owed nothing (another sender on the number?)\n")
				continue
			}
			fmt.Fprintf(out, "  victim of a burst of %d that began at %s (%v earlier); the pair still owed %v\n",
				v.BurstLen, v.BurstStart.Format(time.TimeOnly), a.At.Sub(v.BurstStart).Round(10*time.Millisecond), v.Debt.Round(10*time.Millisecond))
			fmt.Fprintf(out, "  fix: after a burst of n, hold the pair n x 6 s (pairlimit does), or send fewer bubbles\n")
		}
	}
	fmt.Fprintf(out, "%d attempts read, %d pairs, %d 131056 explained\n", countAll(byPair), len(byPair), found)
	return nil
}

func countAll(m map[string][]line) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
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
