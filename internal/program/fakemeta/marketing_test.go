package fakemeta

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/throughput"
)

// cpuHog keeps every core busy at the lowest priority for the rest of the
// test, so that wall-clock promises hold on a loaded machine. It skips
// the load, not the test, where nice is missing.
func cpuHog(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("nice"); err != nil {
		t.Log("no nice: running without the CPU hog")
		return
	}
	for range runtime.NumCPU() {
		cmd := exec.Command("nice", "-n", "19", "sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Logf("CPU hog: %v", err)
			return
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}

// TestMarketingRoutingOverSockets is the wall-clock proof of routing by
// latest category: a campaign of marketing and utility templates from one
// number, over real sockets to the command, with the utility template
// recategorised as MARKETING by a signed webhook mid-run. The two endpoints
// share the number's throughput and the pair rule, so the fake refuses
// nothing; marketing templates only ever go to /marketing_messages, and the
// recategorised one moves there once the notice is applied.
func TestMarketingRoutingOverSockets(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	cpuHog(t)
	const waba, number, secret, n = "102290129340398", "106540352242922", "SECRET", 160
	var reg cloudapi.TemplateRegistry
	var applied atomic.Bool
	h, err := webhook.NewHandler(secret,
		webhook.OnTemplateCategory(func(_ context.Context, ev webhook.Event, u *webhook.TemplateCategoryUpdate) error {
			if _, ok := reg.ApplyCategoryUpdate(ev.WABAID, u); ok {
				applied.Store(true)
			}
			return nil
		}),
		webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }),
		webhook.OnStatus(func(context.Context, webhook.Event, *webhook.Status) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	hook := httptest.NewServer(h)
	defer hook.Close()
	url := start(t, "-mps", "40", "-app-secret", secret, "-webhook", hook.URL,
		"-template", "spring_sale:en_US:MARKETING", "-template", "order_update:en_US:UTILITY")
	// Headroom absorbs the jitter of real sockets on a loaded machine
	// (throughput.WithHeadroom), as a sender over a network keeps.
	c, err := cloudapi.New("TOKEN", cloudapi.WithBaseURL(url), cloudapi.WithThroughput(40, throughput.WithHeadroom(0.2)),
		cloudapi.WithTemplateCategories(waba, &reg))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.ListTemplates(t.Context(), waba)
	if err != nil || reg.Fill(waba, ts) != 2 {
		t.Fatalf("listing: %v, %+v", err, ts)
	}

	var wg sync.WaitGroup
	errs := make(chan error, n)
	jobs := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				name := "order_update"
				if i%2 == 0 {
					name = "spring_sale"
				}
				m := cloudapi.Template(fmt.Sprintf("+23769%07d", i), name, "en_US")
				m.IdempotencyKey = fmt.Sprintf("%s-%d", name, i)
				if _, err := c.Send(t.Context(), number, m); err != nil {
					errs <- fmt.Errorf("%s: %w", m.IdempotencyKey, err)
				}
			}
		}()
	}
	for i := range n {
		if i == n/2 {
			body := `{"waba_id":"` + waba + `","name":"order_update","language":"en_US","category":"MARKETING"}`
			resp, err := http.Post(url+"/_fake/recategorize", "application/json", strings.NewReader(body))
			if err != nil || resp.StatusCode != http.StatusNoContent {
				t.Fatalf("recategorize: %v %v", resp, err)
			}
			resp.Body.Close()
			for deadline := time.Now().Add(10 * time.Second); !applied.Load() && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if !applied.Load() {
				t.Fatal("the category notice never reached the handler")
			}
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	s := stats(t, url)
	if s.Accepted != n || len(s.Refusals) != 0 || s.Duplicates != 0 {
		t.Errorf("accepted %d of %d, refusals %v, duplicates %d", s.Accepted, n, s.Refusals, s.Duplicates)
	}
	resp, err := http.Get(url + "/_fake/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var log []record
	if err := json.NewDecoder(resp.Body).Decode(&log); err != nil {
		t.Fatal(err)
	}
	paths := map[string]int{}
	for _, r := range log {
		if !r.Accepted {
			continue // reported above, as a refusal
		}
		name, _, _ := strings.Cut(r.CallbackData, "-")
		endpoint := r.Path[strings.LastIndex(r.Path, "/")+1:]
		paths[name+" "+endpoint]++
	}
	if paths["spring_sale messages"] != 0 || paths["spring_sale marketing_messages"] != n/2 ||
		paths["order_update messages"] == 0 || paths["order_update marketing_messages"] == 0 {
		t.Errorf("requests by template and endpoint: %v", paths)
	}
}
