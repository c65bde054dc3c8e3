package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// With write marks, Run commits a mark right before each request may
// leave: if this process were killed before then, the next worker would
// queue the message again after its lease instead of leaving it
// submitted_unknown. Nothing else changes.
func ExampleWithWriteMarks() {
	dir, _ := os.MkdirTemp("", "outbox-example")
	defer os.RemoveAll(dir)
	meta := cloudapitest.NewServer(nil)
	defer meta.Close()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	o, err := outbox.Open(ctx, "sqlite:"+filepath.Join(dir, "outbox.db"), outbox.WithWriteMarks(),
		outbox.WithObserver(func(e outbox.Event) {
			if e.State.Final() {
				stop()
			}
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer o.Close()
	client, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		fmt.Println(err)
		return
	}
	m := cloudapi.Text("+237 690 00 00 01", "Your order shipped")
	m.IdempotencyKey = "order-1042-shipped"
	if _, err := o.Enqueue(ctx, "106540352242922", m); err != nil {
		fmt.Println(err)
		return
	}
	if err := o.Run(ctx, client); !errors.Is(err, context.Canceled) {
		fmt.Println(err)
	}
	it, err := o.Get(context.Background(), m.IdempotencyKey)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(it.State, it.Attempts, meta.Accepted())
	// Output:
	// accepted 1 1
}
