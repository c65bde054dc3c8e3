package outbox_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// Under random arrivals and random refusals, each lane's accepted messages
// reach Meta in enqueue order, each at most once, and every item ends in a
// final state: the model is one FIFO sequence per recipient.
func TestLaneOrderProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		synctest.Test(t, func(t *testing.T) {
			meta := cloudapitest.NewServer(t)
			pairs := pairlimit.New(pairlimit.Meta)
			c := newClient(t, meta, cloudapi.WithPairLimiter(pairs))
			o, _ := openSQLite(t, outbox.WithClient(c))
			n := rapid.IntRange(1, 30).Draw(rt, "messages")
			lanes := rapid.IntRange(1, 4).Draw(rt, "lanes")
			model := map[string][]string{} // recipient digits -> keys in enqueue order
			for i := range n {
				r := rapid.IntRange(0, lanes-1).Draw(rt, "lane")
				if rapid.Bool().Draw(rt, "refuse") {
					code := rapid.SampledFrom([]errcodes.Code{errcodes.PairRateLimit, errcodes.ThroughputLimit, errcodes.Undeliverable}).Draw(rt, "code")
					meta.FailNextFor(recipient(r), code)
				}
				m := cloudapi.Text(recipient(r), "x")
				m.IdempotencyKey = fmt.Sprintf("k%d", i)
				if _, err := o.Enqueue(t.Context(), from, m); err != nil {
					t.Fatal(err)
				}
				to, _ := pairlimit.NormalizeRecipient(recipient(r))
				model[to] = append(model[to], m.IdempotencyKey)
				time.Sleep(time.Duration(rapid.IntRange(0, 8000).Draw(rt, "gap_ms")) * time.Millisecond)
			}
			runFor(t, o, c, time.Hour)
			pos := map[string]int{}
			for to, keys := range model {
				for i, k := range keys {
					pos[k] = i
					_ = to
				}
			}
			last := map[string]int{}
			seen := map[string]bool{}
			for _, r := range meta.Requests() {
				if !r.Accepted {
					continue
				}
				if seen[r.CallbackData] {
					t.Fatalf("%s accepted twice", r.CallbackData)
				}
				seen[r.CallbackData] = true
				if p, ok := last[r.To]; ok && pos[r.CallbackData] <= p {
					t.Fatalf("lane %s: %s (position %d) after position %d", r.To, r.CallbackData, pos[r.CallbackData], p)
				}
				last[r.To] = pos[r.CallbackData]
			}
			for _, keys := range model {
				for _, k := range keys {
					it := mustGet(t, o, k)
					if !it.State.Final() {
						t.Fatalf("%s left %v", k, it.State)
					}
					if (it.State == outbox.StateAccepted) != seen[k] {
						t.Fatalf("%s: %v but meta accepted=%v", k, it.State, seen[k])
					}
				}
			}
		})
	})
}
