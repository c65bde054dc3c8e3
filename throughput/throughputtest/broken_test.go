package throughputtest_test

import (
	"context"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/throughput/throughputstore"
	"github.com/wapace/wapace/throughput/throughputtest"
)

// mapStore is a plain Store over maps, applying the pure rules; its flaw,
// if any, is one a real store could have.
type mapStore struct {
	flaw    string
	mu      sync.Mutex
	buckets map[string]throughputstore.BucketState
	tiers   map[string]throughputstore.TierState
	id      uint64
	latest  int64 // the latest instant asked (flaw evictearly)
}

func (s *mapStore) lock(racy bool) func() {
	if racy {
		return func() {}
	}
	s.mu.Lock()
	return s.mu.Unlock
}

func (s *mapStore) Reserve(_ context.Context, key string, t time.Time, n int, interval time.Duration, burst int, maxWait time.Duration) (throughputstore.BucketTicket, bool, error) {
	racy := s.flaw == "racy"
	defer s.lock(racy)()
	var st throughputstore.BucketState
	if racy { // read, then write: no script
		s.mu.Lock()
		st = s.buckets[key]
		s.mu.Unlock()
		runtime.Gosched()
	} else {
		st = s.buckets[key]
	}
	if s.flaw == "ok-evict" { // no flaw: forgets only what Expired allows
		s.latest = max(s.latest, t.UnixNano())
		if st.Expired(s.latest) {
			st = throughputstore.BucketState{}
		}
	}
	if s.flaw == "evictearly" {
		// A sweep forgets buckets full again by the latest instant asked,
		// without the second Expired keeps for instants out of order.
		s.latest = max(s.latest, t.UnixNano())
		if max(st.TAT, st.Hold) <= s.latest {
			st = throughputstore.BucketState{}
		}
	}
	next := st.Next(t.UnixNano(), n, interval, burst)
	if n > burst || (s.flaw != "nowait" && maxWait != time.Duration(math.MaxInt64) && next > t.UnixNano()+int64(maxWait)) {
		return throughputstore.BucketTicket{Act: next}, false, nil
	}
	if racy {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	s.id++
	st, tk := st.Reserve(t.UnixNano(), n, interval, burst, s.id)
	s.buckets[key] = st
	return tk, true, nil
}

func (s *mapStore) Cancel(_ context.Context, key string, t time.Time, tk throughputstore.BucketTicket) (bool, error) {
	defer s.lock(false)()
	st := s.buckets[key]
	if s.flaw == "cancelany" {
		st.Top = tk.ID
	}
	st, ok := st.Cancel(tk, t.UnixNano())
	if ok {
		s.buckets[key] = st
	}
	return ok, nil
}

func (s *mapStore) Hold(_ context.Context, key string, until time.Time) (time.Time, error) {
	defer s.lock(false)()
	st := s.buckets[key]
	if s.flaw == "holdshort" {
		st.Hold = until.UnixNano()
	} else {
		st = st.Extend(until.UnixNano())
	}
	s.buckets[key] = st
	return time.Unix(0, st.Hold), nil
}

func (s *mapStore) tier(key string) throughputstore.TierState {
	ts, ok := s.tiers[key]
	if !ok {
		ts = throughputstore.TierState{Last: map[uint64]int64{}}
		s.tiers[key] = ts
	}
	return ts
}

func (s *mapStore) Claim(_ context.Context, key string, to uint64, t time.Time, limit int, window time.Duration) (throughputstore.TierTicket, bool, time.Time, error) {
	if s.flaw == "racyclaim" { // count, then add: no script
		s.mu.Lock()
		ts := s.tier(key)
		cp := throughputstore.TierState{Last: map[uint64]int64{}}
		for k, v := range ts.Last {
			cp.Last[k] = v
		}
		s.mu.Unlock()
		tk, ok, retry := cp.Claim(to, t.UnixNano(), limit, window)
		// Widen the window between count and add so that concurrent
		// claims overlap on a loaded machine too (a Gosched alone let
		// the kit pass this store in 1 run of 21).
		time.Sleep(time.Millisecond)
		if !ok {
			return tk, false, time.Unix(0, retry), nil
		}
		s.mu.Lock()
		s.tier(key).Last[to] = cp.Last[to]
		s.mu.Unlock()
		return tk, true, time.Time{}, nil
	}
	defer s.lock(false)()
	st := s.tier(key)
	tk, ok, retry := st.Claim(to, t.UnixNano(), limit, window)
	if !ok {
		return tk, false, time.Unix(0, retry), nil
	}
	return tk, true, time.Time{}, nil
}

func (s *mapStore) Release(_ context.Context, key string, tk throughputstore.TierTicket) (bool, error) {
	defer s.lock(false)()
	ts := s.tier(key)
	if s.flaw == "releaseany" {
		tk.At, tk.New = ts.Last[tk.To], true
	}
	return ts.Release(tk), nil
}

func (s *mapStore) Count(_ context.Context, key string, t time.Time, window time.Duration) (int, error) {
	defer s.lock(false)()
	return s.tier(key).Count(t.UnixNano(), window), nil
}

const envFlaw = "THROUGHPUTTEST_FLAW"

// TestKitCatchesBrokenStores runs the kit, in a child process, against
// stores with one flaw each, and requires it to fail; and against the
// same store without a flaw, or forgetting buckets as BucketState.Expired
// allows ("ok-evict"), which must pass. (The kit failed "ok-evict": it
// required a reservation's PrevTop even after the state had expired.)
func TestKitCatchesBrokenStores(t *testing.T) {
	if flaw, ok := os.LookupEnv(envFlaw); ok {
		throughputtest.TestStore(t, func(*testing.T) throughputstore.Store {
			return &mapStore{flaw: flaw, buckets: map[string]throughputstore.BucketState{}, tiers: map[string]throughputstore.TierState{}}
		})
		return
	}
	if testing.Short() {
		t.Skip("runs the kit in child processes")
	}
	for _, flaw := range []string{"", "ok-evict", "racy", "nowait", "cancelany", "holdshort", "racyclaim", "releaseany", "evictearly"} {
		t.Run("flaw="+flaw, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestKitCatchesBrokenStores$", "-test.count=1")
			cmd.Env = append(os.Environ(), envFlaw+"="+flaw)
			out, err := cmd.CombinedOutput()
			correct := flaw == "" || strings.HasPrefix(flaw, "ok-")
			switch {
			case correct && err != nil:
				t.Fatalf("the kit fails a correct store: %v\n%s", err, out)
			case !correct && err == nil:
				t.Fatalf("the kit passes a store with flaw %q", flaw)
			}
		})
	}
}
