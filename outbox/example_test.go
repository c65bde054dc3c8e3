package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/outbox"
)

// Enqueue a message, dispatch it through a Client, and read its record.
func Example() {
	dir, _ := os.MkdirTemp("", "outbox-example")
	defer os.RemoveAll(dir)
	meta := cloudapitest.NewServer(nil) // a fake Meta; in a test: cloudapitest.NewServer(t)
	defer meta.Close()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// The Client owns every limit; the Outbox estimates with them.
	client, err := cloudapi.New("TOKEN", cloudapi.WithHTTPClient(meta.Client()), cloudapi.WithBaseURL(cloudapitest.BaseURL))
	if err != nil {
		fmt.Println(err)
		return
	}
	o, err := outbox.Open(ctx, "sqlite:"+filepath.Join(dir, "outbox.db"), outbox.WithClient(client),
		outbox.WithObserver(func(e outbox.Event) {
			if e.State.Final() {
				stop() // one message: stop once it is settled
			}
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer o.Close()

	m := cloudapi.Text("+237 690 00 00 01", "Your order shipped")
	m.IdempotencyKey = "order-1042-shipped"
	t, err := o.Enqueue(ctx, "106540352242922", m)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.Key, t.State)

	if err := o.Run(ctx, client); !errors.Is(err, context.Canceled) {
		fmt.Println(err)
	}
	it, err := o.Get(context.Background(), t.Key)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(it.State, it.Attempts)
	for _, tr := range it.History {
		fmt.Println(" ", tr.State)
	}
	// Output:
	// order-1042-shipped queued
	// accepted 1
	//   queued
	//   sending
	//   accepted
}

// A message that cannot be sent before its deadline is rejected at
// enqueue, storing nothing.
func ExampleOutbox_Enqueue_reject() {
	dir, _ := os.MkdirTemp("", "outbox-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	o, err := outbox.Open(ctx, "sqlite:"+filepath.Join(dir, "outbox.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer o.Close()
	for i := range 3 {
		m := cloudapi.Text("+237 690 00 00 01", fmt.Sprintf("update %d", i))
		m.ExpiresAt = time.Now().Add(10 * time.Second) // one message per 6 s to one user
		_, err := o.Enqueue(ctx, "106540352242922", m)
		var re *outbox.RejectError
		switch {
		case errors.Is(err, outbox.ErrExpired) && errors.As(err, &re):
			fmt.Printf("message %d rejected: %v, ready in %v\n", i, re.Limit, re.RetryAfter())
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Printf("message %d queued\n", i)
		}
	}
	// Output:
	// message 0 queued
	// message 1 queued
	// message 2 rejected: pair, ready in 12s
}
