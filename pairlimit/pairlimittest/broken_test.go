package pairlimittest_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairlimittest"
	"github.com/wapace/wapace/pairlimit/pairstore"
)

// mapStore is a plain Store over a map, applying the State methods; its
// flaw, if any, is one a real store could have.
type mapStore struct {
	flaw string
	mu   sync.Mutex
	m    map[pairstore.Pair]pairstore.State
	id   uint64
	// latest is the latest instant asked (flaw evictatdue)
	latest int64
}

func (s *mapStore) load(p pairstore.Pair) pairstore.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[p]
}

func (s *mapStore) save(p pairstore.Pair, st pairstore.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[p] = st
}

func (s *mapStore) Reserve(_ context.Context, p pairstore.Pair, t time.Time, cost, maxWait time.Duration) (pairstore.Ticket, bool, error) {
	if s.flaw != "racy" {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	var st pairstore.State
	if s.flaw == "racy" { // GET, then SET: two round trips, no script
		st = s.load(p)
		runtime.Gosched()
	} else {
		st = s.m[p]
	}
	if s.flaw == "ok-evict" { // no flaw: forgets only what Expired allows
		s.latest = max(s.latest, t.UnixNano())
		if st.Expired(s.latest, 15*time.Minute) {
			st = pairstore.State{}
		}
	}
	if s.flaw == "evictatdue" {
		// A sweep forgets states repaid by the latest instant asked,
		// without KeepAfterDue for instants that arrive out of order.
		s.latest = max(s.latest, t.UnixNano())
		if st.Fails == 0 && st.Due <= s.latest {
			st = pairstore.State{}
		}
	}
	if next := st.Next(t.UnixNano()); s.flaw != "nowait" && maxWait != pairlimit.InfDuration && next > t.UnixNano()+int64(maxWait) {
		return pairstore.Ticket{Act: next}, false, nil
	}
	if s.flaw == "nocost" {
		cost = cost / 2
	}
	s.id++
	st, tk := st.Reserve(t.UnixNano(), cost, s.id)
	if s.flaw == "racy" {
		s.save(p, st)
	} else {
		s.m[p] = st
	}
	return tk, true, nil
}

func (s *mapStore) Next(_ context.Context, p pairstore.Pair, t time.Time) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.m[p]
	if s.flaw == "nextnow" {
		return t, nil
	}
	return time.Unix(0, st.Next(t.UnixNano())), nil
}

func (s *mapStore) Cancel(_ context.Context, p pairstore.Pair, t time.Time, tk pairstore.Ticket) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[p]
	if !ok {
		return false, nil
	}
	if s.flaw == "cancelany" { // gives back whatever stands on it
		st.Top = tk.ID
		st.Due = max(tk.End, st.Hold)
	}
	st, ok = st.Cancel(tk, t.UnixNano())
	if ok {
		s.m[p] = st
	}
	return ok, nil
}

func (s *mapStore) Refuse(_ context.Context, p pairstore.Pair, t time.Time, holds []time.Duration, _ time.Duration) (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.m[p]
	if s.flaw == "forgetearly" && st.Hold <= t.UnixNano() && st.Due <= t.UnixNano() {
		st = pairstore.State{} // forgets the 131056 count as soon as the hold ends
	}
	st, hold := st.Refuse(t.UnixNano(), holds)
	if s.flaw == "forgetfails" {
		st.Fails = 0
	}
	s.m[p] = st
	return hold, nil
}

func (s *mapStore) Accept(_ context.Context, p pairstore.Pair, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[p]; ok {
		s.m[p] = st.Accept()
	}
	return nil
}

const envFlaw = "PAIRLIMITTEST_FLAW"

// TestKitCatchesBrokenStores runs the kit, in a child process, against
// stores with one flaw each, and requires it to fail; and against the
// same store without a flaw, or forgetting states as State.Expired allows
// ("ok-evict"), which must pass.
func TestKitCatchesBrokenStores(t *testing.T) {
	if flaw, ok := os.LookupEnv(envFlaw); ok {
		pairlimittest.TestStore(t, func(*testing.T) pairstore.Store {
			return &mapStore{flaw: flaw, m: map[pairstore.Pair]pairstore.State{}}
		})
		return
	}
	if testing.Short() {
		t.Skip("runs the kit in child processes")
	}
	for _, flaw := range []string{"", "ok-evict", "racy", "nowait", "nocost", "nextnow", "cancelany", "forgetfails", "forgetearly", "evictatdue"} {
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
