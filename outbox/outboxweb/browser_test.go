package outboxweb_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// requireChromium returns the path of a headless-capable Chromium. Without
// one the test skips, or fails under WAPACE_REQUIRE_SERVICES=1.
func requireChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("WAPACE_REQUIRE_SERVICES") == "1" {
		t.Fatal("no chromium on PATH and WAPACE_REQUIRE_SERVICES=1 (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// artifactDir is where the screenshots go: $WAPACE_ARTIFACTS/outboxweb,
// or the test's temporary directory.
func artifactDir(t *testing.T) string {
	dir := t.TempDir()
	if a := os.Getenv("WAPACE_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "outboxweb")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestConsoleInBrowser drives a real headless Chromium through the
// console of a seeded outbox: the dashboard, a dead letter's history, its
// requeue, and the timeline of the pair whose burst caused a 131056.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	exe := requireChromium(t)
	s := seed(t)
	base := s.serve(t)
	dir := artifactDir(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("headless", "new"), chromedp.WindowSize(1200, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()

	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var png []byte
			if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
		})
	}
	var dash, state, history, svg, summary, loc string
	var sends, refusals int
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/?token="+token),
		chromedp.WaitVisible(`#dead`, chromedp.ByID),
		chromedp.Location(&loc),
		chromedp.Text(`main`, &dash, chromedp.ByQuery),
		shot("1-dashboard"),
		// Follow the dead letter to its history.
		chromedp.Click(`#dead a[href*="dead-1"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#history`, chromedp.ByID),
		chromedp.Text(`#history`, &history, chromedp.ByID),
		shot("2-dead-letter"),
		// Requeue it.
		chromedp.SendKeys(`#requeue input[name=reason]`, "template fixed, ticket 42", chromedp.ByQuery),
		chromedp.Click(`#requeue button`, chromedp.ByQuery),
		chromedp.WaitVisible(`.notice`, chromedp.ByQuery),
		chromedp.Text(`#state`, &state, chromedp.ByID),
		shot("3-requeued"),
		// The pair timeline of the refused message.
		chromedp.Navigate(base+"/item?key=victim"),
		chromedp.Click(`#timeline-link`, chromedp.ByID),
		chromedp.WaitVisible(`svg.timeline`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("svg.timeline circle.send").length`, &sends),
		chromedp.Evaluate(`document.querySelectorAll("svg.timeline g.refusal").length`, &refusals),
		chromedp.Evaluate(`document.querySelector("svg.timeline").textContent`, &svg),
		chromedp.Text(`#lane-summary`, &summary, chromedp.ByID),
		shot("4-pair-timeline"),
		chromedp.ActionFunc(func(ctx context.Context) error {
			var png []byte
			if err := chromedp.Screenshot(`#chart`, &png, chromedp.ByID).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "5-chart.png"), png, 0o644)
		}),
	)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	t.Logf("screenshots in %s", dir)
	if strings.Contains(loc, "token") {
		t.Errorf("the token stayed in the address bar: %s", loc)
	}
	for _, want := range []string{"dead-1", "131049", "failed"} {
		if !strings.Contains(dash, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	if strings.Contains(dash, "237690000002") {
		t.Error("the dashboard shows bob's number unmasked")
	}
	if !strings.Contains(history, "queued") || !strings.Contains(history, "failed") {
		t.Errorf("history %q", history)
	}
	if state != "queued" {
		t.Errorf("state after requeue %q, want queued", state)
	}
	if it, _ := s.o.Get(t.Context(), "dead-1"); !strings.Contains(it.History[len(it.History)-1].Reason, "ticket 42") {
		t.Errorf("requeue's recorded reason %q", it.History[len(it.History)-1].Reason)
	}
	if sends != burstOf || refusals != 1 || !strings.Contains(svg, "131056") {
		t.Errorf("timeline: %d sends, %d refusals, text %q; want the burst of %d and one 131056", sends, refusals, svg, burstOf)
	}
	if !strings.Contains(summary, "1 refused with 131056") {
		t.Errorf("summary %q", summary)
	}
}
