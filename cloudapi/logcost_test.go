package cloudapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
)

// nopHandler is enabled at every level and drops every record.
type nopHandler struct{ enabled bool }

func (h nopHandler) Enabled(context.Context, slog.Level) bool { return h.enabled }
func (nopHandler) Handle(context.Context, slog.Record) error  { return nil }
func (h nopHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h nopHandler) WithGroup(string) slog.Handler            { return h }

// Promise 9: with the logger's level disabled (and no observer), an
// attempt builds no attributes and no pair pseudonym: it costs several
// allocations less than with a logger that is enabled.
func TestDisabledLoggerCostsNothing(t *testing.T) {
	allocs := func(enabled bool) float64 {
		const mps = 10_000                                                   // the most a throughput.Limiter accepts
		srv := cloudapitest.NewServer(t, cloudapitest.WithThroughput(1<<30)) // the fake never refuses
		c, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(srv.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL),
			cloudapi.WithThroughput(mps), cloudapi.WithLogger(slog.New(nopHandler{enabled})))
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		return testing.AllocsPerRun(200, func() {
			i++
			if _, err := c.Send(context.Background(), number, cloudapi.Text(fmt.Sprintf("+2376%08d", i), "x")); err != nil {
				t.Fatal(err)
			}
		})
	}
	off, on := allocs(false), allocs(true)
	t.Logf("allocations per send: logger off %.0f, on %.0f", off, on)
	if on-off < 8 {
		t.Errorf("a disabled logger saves %.0f allocations per send, want the attributes and the pseudonym (at least 8)", on-off)
	}
}
