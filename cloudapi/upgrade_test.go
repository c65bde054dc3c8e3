package cloudapi_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
)

// TestUpgradeRaisesTheRateOfQueuedSends: a campaign already queued at the
// old 80 msg/s when Meta begins a throughput upgrade goes on at 1,000
// msg/s once the upgrade's 131057 hold is over. Every message is admitted
// at t = 0, before the first 131057, so the slots met by the hold were
// all taken at the old figure: they must be given back and taken again
// after the hold, at the figure in force then, not moved past the hold at
// the old rate (which kept the campaign at 80 msg/s for another 25 s, and
// made TestThroughputUpgradeWebhookRaisesTheRate depend on how many sends
// were admitted in the instant before the first refusal).
func TestUpgradeRaisesTheRateOfQueuedSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t, cloudapitest.WithAppSecret("s3cret"))
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		hook, err := webhook.NewHandler("s3cret",
			webhook.OnQuality(func(_ context.Context, ev webhook.Event, u *webhook.QualityUpdate) error {
				webhook.ApplyThroughputUpdate(c.Number(number), u, ev.Time)
				return nil
			}),
			webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		// 1.5 s falls between two of the number's slots at 80 msg/s.
		const begins = 1500 * time.Millisecond
		go func() {
			time.Sleep(begins)
			notice := srv.UpgradeThroughput(waba, number, time.Minute)
			time.Sleep(time.Minute)
			if res := srv.PostWebhook(hook, notice); res.StatusCode != 200 {
				t.Errorf("webhook answered %d", res.StatusCode)
			}
		}()
		sendUpgradeCampaign(t, c, srv, 2000)
		// About 120 messages go before the upgrade begins; the number's
		// 131057 hold, polled after 10, 20 and 40 s, ends 70 s after it
		// (71.5 s); the other ~1,880 then take under 2 s at 1,000 msg/s,
		// and would take 23 s at 80.
		if took, want := time.Since(start), begins+70*time.Second+2*time.Second; took > want {
			t.Errorf("the campaign took %v, want at most %v: queued sends kept the old rate", took, want)
		}
	})
}

// sendUpgradeCampaign sends n texts from number to as many recipients at
// once, through a number whose throughput upgrade is under way, and fails
// on any error; then the number must send at throughput.Upgraded, and the
// fake must have answered no 130429.
func sendUpgradeCampaign(t *testing.T, c *cloudapi.Client, srv *cloudapitest.Server, n int) {
	t.Helper()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Send(t.Context(), number, cloudapi.Text("+23769"+fmt.Sprintf("%07d", i), "hi"))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Number(number).PerSecond(); got != throughput.Upgraded {
		t.Errorf("number at %d msg/s after the upgrade notice", got)
	}
	if n := srv.Count(errcodes.ThroughputLimit); n != 0 {
		t.Errorf("%d x 130429", n)
	}
}

// TestRaiseMovesQueuedSlotsForward: 2,000 sends queued at 80 msg/s (25 s
// of slots) when the number's figure is raised to 1,000 after 1 s (the
// THROUGHPUT_UPGRADE notice, no hold) go on at 1,000 msg/s: the slots still
// waiting move forward (see internal/slotmoves). They kept their
// old instants, and the campaign took 25 s.
func TestRaiseMovesQueuedSlotsForward(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(number, throughput.Upgraded))
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		go func() {
			time.Sleep(time.Second)
			if err := c.Number(number).SetMPSAt(time.Now(), throughput.Upgraded); err != nil {
				t.Error(err)
			}
		}()
		sendUpgradeCampaign(t, c, srv, 2000)
		// About 80 go in the first second; the other 1,920 then take
		// 1.94 s at 990 msg/s (99 % of the figure).
		if took, want := time.Since(start), 3*time.Second; took > want {
			t.Errorf("the campaign took %v, want at most %v: queued sends kept the old rate", took, want)
		}
	})
}

// TestCutMovesQueuedSlotsLater: 2,000 sends queued at 1,000 msg/s when the
// number's figure is cut to 80 after 100 ms go on at 80 msg/s: the slots
// still waiting move later, so that no second after the cut holds more
// than 80 of them. They kept their instants, and went within 2 s.
func TestCutMovesQueuedSlotsLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cloudapitest.NewServer(t, cloudapitest.WithNumberThroughput(number, throughput.Upgraded))
		c, err := cloudapi.New(secretToken, cloudapi.WithHTTPClient(srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL),
			cloudapi.WithNumberThroughput(number, throughput.Upgraded))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		cut := start.Add(100 * time.Millisecond)
		go func() {
			time.Sleep(100 * time.Millisecond)
			if err := c.Number(number).SetMPSAt(time.Now(), throughput.Default); err != nil {
				t.Error(err)
			}
		}()
		var wg sync.WaitGroup
		for i := range 2000 {
			wg.Go(func() {
				if _, err := c.Send(t.Context(), number, cloudapi.Text("+23769"+fmt.Sprintf("%07d", i), "hi")); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		var after []time.Time
		for _, r := range srv.Requests() {
			if !r.At.Before(cut.Add(time.Second)) {
				after = append(after, r.At)
			}
		}
		slices.SortFunc(after, time.Time.Compare)
		for i, a := range after {
			n := 0
			for _, b := range after[i:] {
				if b.After(a.Add(time.Second)) {
					break
				}
				n++
			}
			if n > throughput.Default {
				t.Fatalf("%d sends in the second from +%v, a second after the cut to 80 msg/s", n, a.Sub(start))
			}
		}
		if took := time.Since(start); took < 20*time.Second {
			t.Errorf("the campaign took %v: the slots kept the old rate after the cut", took)
		}
	})
}
