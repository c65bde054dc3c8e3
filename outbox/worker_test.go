package outbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// Two live processes under one WithWorkerID: the second Run is refused;
// once the first has stopped, the name is free again.
func TestWorkerIDInUse(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			var dsn string
			if db == "sqlite" {
				_, dsn = openSQLite(t)
			} else {
				dsn = requirePostgres(t)
			}
			opts := []outbox.Option{outbox.WithWorkerID("w1"), outbox.WithLease(200 * time.Millisecond)}
			a, err := outbox.Open(t.Context(), dsn, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := outbox.Open(t.Context(), dsn, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			meta := cloudapitest.NewServer(t)
			ctx, cancel := context.WithCancel(t.Context())
			errA := make(chan error, 1)
			go func() { errA <- a.Run(ctx, newClient(t, meta)) }()
			// Once A holds the name (not after a fixed sleep: on a loaded
			// machine A's Run may not have registered yet, and B would
			// take the free name), B waits for A's heartbeat to lapse; it
			// does not.
			for held := 0; held == 0; {
				if err := a.DB().QueryRowContext(t.Context(), `SELECT COUNT(*) FROM outbox_workers WHERE name = 'w1'`).Scan(&held); err != nil {
					t.Fatal(err)
				}
				select {
				case err := <-errA:
					t.Fatalf("the first ended before it held the name: %v", err)
				case <-time.After(5 * time.Millisecond):
				}
			}
			bctx, bcancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer bcancel()
			if err := b.Run(bctx, newClient(t, meta)); !errors.Is(err, outbox.ErrWorkerIDInUse) {
				t.Fatalf("a second live process under the same name: %v, want ErrWorkerIDInUse", err)
			}
			cancel()
			if err := <-errA; !errors.Is(err, context.Canceled) {
				t.Fatalf("the first: %v", err)
			}
			// A stopped and released the name: B may take it at once.
			bctx2, bcancel2 := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer bcancel2()
			if err := b.Run(bctx2, newClient(t, meta)); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("after the first stopped: %v", err)
			}
		})
	}
}
