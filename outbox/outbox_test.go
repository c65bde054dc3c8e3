package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
)

const from = "106540352242922"

func recipient(i int) string { return fmt.Sprintf("+23769%07d", i) }

// openSQLite opens an outbox in a fresh temporary file.
func openSQLite(t *testing.T, opts ...outbox.Option) (*outbox.Outbox, string) {
	t.Helper()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "outbox.db")
	o, err := outbox.Open(t.Context(), dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o, dsn
}

func newClient(t *testing.T, meta *cloudapitest.Server, opts ...cloudapi.Option) *cloudapi.Client {
	t.Helper()
	c, err := cloudapi.New("TOKEN", append([]cloudapi.Option{cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runUntil runs o until cond holds (checked on every transition's wake)
// or the simulated deadline passes, inside a synctest bubble.
func runFor(t *testing.T, o *outbox.Outbox, c *cloudapi.Client, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	if err := o.Run(ctx, c); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v", err)
	}
}

func mustGet(t *testing.T, o *outbox.Outbox, key string) outbox.Item {
	t.Helper()
	it, err := o.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func TestEnqueueRunAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meta := cloudapitest.NewServer(t)
		o, _ := openSQLite(t)
		c := newClient(t, meta)
		var keys []string
		for i := range 20 {
			for j := range 3 {
				m := cloudapi.Text(recipient(i), fmt.Sprintf("m%d-%d", i, j))
				tk, err := o.Enqueue(t.Context(), from, m)
				if err != nil {
					t.Fatal(err)
				}
				if tk.State != outbox.StateQueued || tk.Key == "" {
					t.Fatalf("ticket %+v", tk)
				}
				keys = append(keys, tk.Key)
			}
		}
		runFor(t, o, c, time.Minute)
		for _, k := range keys {
			it := mustGet(t, o, k)
			if it.State != outbox.StateAccepted || it.MessageID == "" {
				t.Fatalf("item %s: %v %q", k, it.State, it.Reason)
			}
			if len(it.History) != 3 {
				t.Fatalf("history %+v", it.History)
			}
		}
		if got := meta.Accepted(); got != 60 {
			t.Fatalf("accepted %d, want 60", got)
		}
		if n := meta.Count(errcodes.PairRateLimit); n != 0 {
			t.Fatalf("%d x 131056", n)
		}
	})
}

func fmtInt(n int64) string { return fmt.Sprint(n) }
