package mcptool_test

import (
	"fmt"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/mcptool"
)

// step is one call of a random plan, and the pause after it.
type step struct {
	args  map[string]any
	pause time.Duration
}

// TestPropertyResultsAreTrue runs random plans of calls (two users, fresh
// and repeated keys, deadlines from 1 s to none, sync and async, pauses) on
// simulated time and checks that what each call told the model was true once
// everything settled: nothing reached Meta twice, an accepted message was
// accepted with that message_id, a message only ever refused never reached
// Meta, a queued one ended accepted or expired unsent, and Meta never
// answered 131056.
func TestPropertyResultsAreTrue(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var plan []step
		var keys []string
		for i := range rapid.IntRange(1, 12).Draw(rt, "calls") {
			key := fmt.Sprintf("k%d", i)
			if len(keys) > 0 && rapid.Bool().Draw(rt, "repeat") {
				key = rapid.SampledFrom(keys).Draw(rt, "key")
			} else {
				keys = append(keys, key)
			}
			args := map[string]any{
				"to":              fmt.Sprintf("+237 690 00 00 0%d", rapid.IntRange(1, 2).Draw(rt, "user")),
				"text":            "message " + key,
				"idempotency_key": key,
				"delivery":        rapid.SampledFrom([]string{"sync", "async"}).Draw(rt, "delivery"),
			}
			if d := rapid.SampledFrom([]int{-1, 1000, 5000, 20_000, 600_000}).Draw(rt, "max_delay_ms"); d >= 0 {
				args["max_delay_ms"] = d
			}
			pause := time.Duration(rapid.SampledFrom([]int{0, 0, 0, 1, 7}).Draw(rt, "pause_s")) * time.Second
			plan = append(plan, step{args, pause})
		}
		var violation string
		synctest.Test(t, func(t *testing.T) { violation = runPlan(t, plan) })
		if violation != "" {
			rt.Fatal(violation)
		}
	})
}

// runPlan executes plan and returns the first broken promise, or "".
func runPlan(t *testing.T, plan []step) string {
	dir, err := os.MkdirTemp("", "mcptool-prop")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	w, stop := openWorld(t, dir, mcptool.Config{})
	defer stop()

	type call struct {
		key   string
		isErr bool
		res   map[string]any
	}
	var calls []call
	for _, s := range plan {
		res, isErr := w.send(s.args)
		calls = append(calls, call{s.args["idempotency_key"].(string), isErr, res})
		time.Sleep(s.pause)
	}
	time.Sleep(15 * time.Minute)

	accepted := map[string][]string{}
	reached := map[string]bool{}
	for _, r := range w.meta.Requests() {
		reached[r.CallbackData] = true
		if r.Accepted {
			accepted[r.CallbackData] = append(accepted[r.CallbackData], r.MessageID)
		}
	}
	refusedOnly := map[string]bool{}
	for _, c := range calls {
		if _, ok := refusedOnly[c.key]; !ok {
			refusedOnly[c.key] = true
		}
		if !c.isErr || c.res["send_state"] != "not_submitted" {
			refusedOnly[c.key] = false
		}
	}
	for key, ids := range accepted {
		if len(ids) > 1 {
			return fmt.Sprintf("%s accepted %d times", key, len(ids))
		}
	}
	for _, c := range calls {
		switch {
		case !c.isErr && c.res["status"] == "accepted":
			if ids := accepted[c.key]; len(ids) != 1 || ids[0] != c.res["message_id"] {
				return fmt.Sprintf("%s reported accepted as %v, Meta accepted %v", c.key, c.res["message_id"], ids)
			}
		case !c.isErr && c.res["status"] == "queued":
			st := w.status(c.key)["status"]
			if st != "accepted" && st != "expired" {
				return fmt.Sprintf("%s queued, ended %v", c.key, st)
			}
			if (st == "accepted") != (len(accepted[c.key]) == 1) {
				return fmt.Sprintf("%s ended %v, Meta accepted %v", c.key, st, accepted[c.key])
			}
		case c.isErr && refusedOnly[c.key]:
			if reached[c.key] {
				return fmt.Sprintf("%s was only ever refused (%v) but reached Meta", c.key, c.res["code"])
			}
		case !c.isErr:
			return fmt.Sprintf("%s: status %v", c.key, c.res["status"])
		}
	}
	if n := w.meta.Count(errcodes.PairRateLimit); n != 0 {
		return fmt.Sprintf("%d x 131056", n)
	}
	return ""
}
