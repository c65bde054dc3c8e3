// Command workers runs three sender processes that share one Redis and one
// fake Meta (wapace-fakemeta's server, in this process), as replicas of a
// bot and campaign workers would: each replies to the same few users
// (single messages and two-bubble replies) and sends its third of a
// campaign from the same business number. Their Clients have separate
// limiters over one redisstore.Store, so they pace as one: the fake
// answers no 131056 (pair rate) and no 130429 (throughput), and accepts
// no message twice. The Clients use default options: each checks every
// request just before its bytes leave and gives a late one's slot back
// for a new one, with a margin that follows the lateness it observes, so
// that requests do not arrive bunched at Meta.
//
//	go run ./examples/workers -redis redis://127.0.0.1:6379/0
//
// Without -redis (or WAPACE_REDIS_URL) it starts a redis-server found on
// PATH on a free loopback port. It prints the fake's counts and exits
// non-zero unless all three are zero and every message was sent. -fast
// shortens Meta's pair interval twenty times (in the fake and the
// limiters alike, with a 2 s burst window) for a quicker run.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/internal/program/fakemeta"
	"github.com/wapace/wapace/internal/redisserver"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/redisstore"
)

const (
	number  = "106540352242922"
	workers = 3
	mps     = 20 // the fake's and the Clients' throughput: a campaign that fills it
)

// users are the recipients every worker replies to.
var users = []string{"+237 690 00 00 01", "+237 690 00 00 02", "+237 690 00 00 03"}

type config struct {
	redisURL, metaURL, prefix string
	id, replies, campaign     int
	fast                      bool
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "workers:", err)
		os.Exit(1)
	}
}

// childEnv marks the processes the example starts as workers (so that a
// test binary, re-executed, knows it too).
const childEnv = "WAPACE_WORKERS_CHILD"

func run(args []string) error {
	var c config
	fs := flag.NewFlagSet("workers", flag.ContinueOnError)
	fs.StringVar(&c.redisURL, "redis", os.Getenv("WAPACE_REDIS_URL"), "Redis URL (default $WAPACE_REDIS_URL, else a redis-server started from PATH)")
	fs.StringVar(&c.metaURL, "meta", "", "internal: the fake Meta's URL")
	fs.StringVar(&c.prefix, "prefix", "", "internal: the Redis key prefix of this run")
	fs.IntVar(&c.id, "id", 0, "internal: the worker's number")
	fs.IntVar(&c.replies, "replies", 3, "replies per worker, to the shared users")
	fs.IntVar(&c.campaign, "campaign", 60, "campaign recipients, shared between the workers")
	fs.BoolVar(&c.fast, "fast", false, "shorten Meta's pair interval twenty times")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if os.Getenv(childEnv) == "1" {
		return worker(c)
	}
	return parent(c)
}

// policy is the pair rule of the fake and of the limiters.
func policy(fast bool) pairlimit.Policy {
	if fast {
		return pairlimit.Policy{Interval: 300 * time.Millisecond, Burst: 45, BurstWindow: 2 * time.Second}
	}
	return pairlimit.Meta
}

func parent(c config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if c.redisURL == "" {
		srv, err := redisserver.Start(ctx)
		if errors.Is(err, redisserver.ErrNotFound) {
			return errors.New("need -redis, WAPACE_REDIS_URL or redis-server on PATH")
		}
		if err != nil {
			return err
		}
		defer srv.Stop()
		c.redisURL = srv.URL
		fmt.Println("started redis-server on", srv.Addr)
	}
	// The fake Meta, served on a loopback port by this process.
	dir, err := os.MkdirTemp("", "wapace-workers")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addrFile := filepath.Join(dir, "meta")
	p := policy(c.fast)
	metaCtx, stopMeta := context.WithCancel(ctx)
	metaDone := make(chan error, 1)
	go func() {
		metaDone <- fakemeta.Run(metaCtx, []string{"-addr-file", addrFile, "-mps", fmt.Sprint(mps),
			"-pair-interval", p.Interval.String(), "-pair-window", p.BurstWindow.String()}, os.Stdout, os.Stderr)
	}()
	defer func() { stopMeta(); <-metaDone }()
	for c.metaURL == "" {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			c.metaURL = strings.TrimSpace(string(b))
			break
		}
		select {
		case err := <-metaDone:
			return fmt.Errorf("fake Meta: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	c.prefix = "wapace-workers:" + hex.EncodeToString(b) + ":"

	self, err := os.Executable()
	if err != nil {
		return err
	}
	start := time.Now()
	var wg sync.WaitGroup
	failed := make(chan error, workers)
	for id := range workers {
		cmd := exec.CommandContext(ctx, self, "-id", fmt.Sprint(id),
			"-redis", c.redisURL, "-meta", c.metaURL, "-prefix", c.prefix,
			"-replies", fmt.Sprint(c.replies), "-campaign", fmt.Sprint(c.campaign), fmt.Sprintf("-fast=%v", c.fast))
		cmd.Env = append(os.Environ(), childEnv+"=1")
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			copyPrefixed(os.Stdout, out, fmt.Sprintf("[worker %d pid %d] ", id, cmd.Process.Pid))
			if err := cmd.Wait(); err != nil {
				failed <- fmt.Errorf("worker %d: %v", id, err)
			}
		}()
	}
	wg.Wait()
	close(failed)
	st, err := fakemeta.FetchStats(ctx, c.metaURL)
	if err != nil {
		return err
	}
	fmt.Printf("%d processes, %s: the fake Meta received %d requests and accepted %d messages\n",
		workers, time.Since(start).Round(time.Millisecond), st.Requests, st.Accepted)
	fmt.Printf("131056 (pair rate): %d\n130429 (throughput): %d\nduplicates: %d\n",
		st.Refusals["131056"], st.Refusals["130429"], st.Duplicates)
	var bad []string
	for err := range failed {
		bad = append(bad, err.Error())
	}
	if n := st.Refusals["131056"] + st.Refusals["130429"] + st.Duplicates; n > 0 {
		bad = append(bad, "the fake counted refusals or duplicates")
	}
	if want := workers*c.replies + c.campaign; st.Accepted < want {
		bad = append(bad, fmt.Sprintf("only %d messages accepted, want at least %d", st.Accepted, want))
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	fmt.Println("OK: three processes paced as one")
	return nil
}

func copyPrefixed(w io.Writer, r io.Reader, prefix string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fmt.Fprintln(w, prefix+sc.Text())
	}
}

// worker is one sender process: its own Client and limiters, the shared
// Redis and fake Meta.
func worker(c config) error {
	opt, err := redis.ParseURL(c.redisURL)
	if err != nil {
		return err
	}
	opt.ContextTimeoutEnabled = true // a send's context bounds its Redis decisions
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	st := redisstore.New(rdb, redisstore.WithPrefix(c.prefix))
	pairs := pairlimit.New(policy(c.fast), pairlimit.WithStore(st))
	client, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(c.metaURL), cloudapi.WithStore(st),
		cloudapi.WithPairLimiter(pairs), cloudapi.WithThroughput(mps))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var errs []error
	note := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // replies to the shared users; every second one in two bubbles
		defer wg.Done()
		for i := range c.replies {
			to := users[(c.id+i)%len(users)]
			key := fmt.Sprintf("w%d-reply%d", c.id, i)
			if i%2 == 1 {
				a, b := cloudapi.Text(to, "Your order shipped."), cloudapi.Text(to, "Tracking: 42")
				a.IdempotencyKey, b.IdempotencyKey = key+"a", key+"b"
				_, err := client.SendBurst(ctx, number, a, b)
				note(err)
				continue
			}
			m := cloudapi.Text(to, "Thanks, we are on it.")
			m.IdempotencyKey = key
			_, err := client.Send(ctx, number, m)
			note(err)
		}
	}()
	go func() { // this worker's share of the campaign
		defer wg.Done()
		for k := c.id; k < c.campaign; k += workers {
			m := cloudapi.Text(fmt.Sprintf("+2376911%05d", k), "Our winter sale starts today.")
			m.IdempotencyKey = fmt.Sprintf("campaign-%d", k)
			_, err := client.Send(ctx, number, m)
			note(err)
		}
	}()
	wg.Wait()
	fmt.Printf("done: %d errors\n", len(errs))
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return nil
}
