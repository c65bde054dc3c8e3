package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/redistest"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/redisstore"
	"github.com/wapace/wapace/throughput"
)

const number = "106540352242922"

// A pair rule scaled down so that the test runs in seconds on the real
// clock: an interval 20 times shorter than Meta's, and a burst window long
// enough for two bubbles queued behind a busy campaign. The fake applies
// the same rule.
var fast = pairlimit.Policy{Interval: 300 * time.Millisecond, Burst: 45, BurstWindow: 2 * time.Second}

// headroom is the share of a number's throughput the Clients leave free.
// The fake counts requests when they arrive, the limiters when they decide;
// at the full figure (19 slots a second and a burst of 1 at 20 mps), one
// request held up over 52 ms between its slot and the fake, the next 20 on
// time, already made 21 in a second: a 130429 in about one run in four on a
// loaded 2-core machine. A fifth kept free (15 a second) absorbs 330 ms,
// and Clients that did not share their bucket would still send more than
// twice the figure.
const headroom = 0.2

func newClient(t *testing.T, url string, st *redisstore.Store, mps int) *cloudapi.Client {
	t.Helper()
	pairs := pairlimit.New(fast, pairlimit.WithStore(st), pairlimit.WithMargin(60*time.Millisecond))
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(url), cloudapi.WithStore(st),
		cloudapi.WithPairLimiter(pairs), cloudapi.WithThroughput(mps, throughput.WithHeadroom(headroom)),
		cloudapi.WithRetry(fixedRetry{}, 1))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fixedRetry: one attempt per message, so that any refusal shows.
type fixedRetry struct{}

func (fixedRetry) Delay(int) time.Duration { return time.Second }

// Three Clients with separate limiters, as in three processes, share one
// Redis: replies to overlapping users, bursts and a campaign on one number
// draw no 131056 and no 130429 from the fake.
func TestClientsShareLimitsThroughRedis(t *testing.T) {
	rdb := redistest.Client(t)
	const mps = 20
	meta := cloudapitest.NewServer(t, cloudapitest.WithThroughput(mps),
		cloudapitest.WithPairRule(fast.Interval, fast.Burst, fast.BurstWindow))
	url := meta.URL()
	prefix := redistest.Prefix(t)
	clients := make([]*cloudapi.Client, 3)
	for i := range clients {
		clients[i] = newClient(t, url, redisstore.New(rdb, redisstore.WithPrefix(prefix)), mps)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	users := []string{"237690000001", "237690000002", "237690000003"}
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for w, c := range clients {
		wg.Add(2)
		go func() { // replies, sometimes two bubbles, to the same few users
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range 8 {
				to := users[rng.IntN(len(users))]
				var err error
				if rng.IntN(3) == 0 {
					_, err = c.SendBurst(ctx, number, cloudapi.Text(to, fmt.Sprint("a", w, i)), cloudapi.Text(to, fmt.Sprint("b", w, i)))
				} else {
					_, err = c.Send(ctx, number, cloudapi.Text(to, fmt.Sprint("r", w, i)))
				}
				if err != nil {
					errs <- err
				}
			}
		}()
		go func() { // a campaign, a third of it per process
			defer wg.Done()
			for i := range 30 {
				if _, err := c.Send(ctx, number, cloudapi.Text(fmt.Sprintf("2376911%05d", w*100+i), "news")); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("send: %v", err)
	}
	if n := meta.Count(errcodes.PairRateLimit); n != 0 {
		t.Errorf("%d x 131056", n)
	}
	if n := meta.Count(errcodes.ThroughputLimit); n != 0 {
		t.Errorf("%d x 130429", n)
	}
	if n := meta.Accepted(); n < 3*30 {
		t.Errorf("only %d accepted", n)
	}
}

// Redis is killed while three Clients send: every message is either
// accepted once or reported not submitted (safe to send again), never sent
// blindly, never left unknown.
func TestKillRedisMidRun(t *testing.T) {
	srv := redistest.Start(t)
	opt, _ := redis.ParseURL(srv.URL)
	opt.MaxRetries = -1
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 200*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	meta := cloudapitest.NewServer(t, cloudapitest.WithPairRule(fast.Interval, fast.Burst, fast.BurstWindow))
	url := meta.URL()
	clients := make([]*cloudapi.Client, 3)
	for i := range clients {
		clients[i] = newClient(t, url, redisstore.New(rdb), throughput.Default)
	}
	type outcome struct {
		key string
		err error
	}
	out := make(chan outcome, 1000)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				m := cloudapi.Text(fmt.Sprintf("23769%07d", i%7), "hi")
				m.IdempotencyKey = fmt.Sprint("w", w, "-", i)
				_, err := c.Send(ctx, number, m)
				out <- outcome{m.IdempotencyKey, err}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	// Kill once a few were sent (a fixed 400 ms saw 7 to 9 of the 120 on a
	// loaded machine: a slower one could see none), long before the paced
	// sends end (about 6 s).
	for meta.Accepted() < 6 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	srv.Kill()
	wg.Wait()
	close(out)
	accepted := map[string]int{}
	for _, r := range meta.Requests() {
		if r.Accepted {
			accepted[r.CallbackData]++
		}
	}
	var sent, notSubmitted int
	for o := range out {
		switch {
		case o.err == nil:
			sent++
			if accepted[o.key] != 1 {
				t.Errorf("%s: sent, but the fake accepted it %d times", o.key, accepted[o.key])
			}
		case cloudapi.StateOf(o.err) == cloudapi.StateNotSubmitted:
			notSubmitted++
			if accepted[o.key] != 0 {
				t.Errorf("%s: reported not submitted, but the fake accepted it", o.key)
			}
			if !errors.Is(o.err, redisstore.ErrUnavailable) && !errors.Is(o.err, context.DeadlineExceeded) {
				t.Errorf("%s: not submitted for another reason: %v", o.key, o.err)
			}
		default:
			t.Errorf("%s: state %v: %v", o.key, cloudapi.StateOf(o.err), o.err)
		}
	}
	if sent == 0 || notSubmitted == 0 {
		t.Errorf("sent %d, not submitted %d: the kill should fall mid-run", sent, notSubmitted)
	}
	t.Logf("sent %d, not submitted %d", sent, notSubmitted)
}
