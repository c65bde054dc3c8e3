package writemark_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapace/wapace/internal/writemark"
)

// A sender's context carries its mark and its fence; the Client calls
// the mark once before the first write, and the fence right before each
// body goes.
func Example() {
	ctx := writemark.With(context.Background(), func(_ context.Context, key string) error {
		fmt.Println("mark", key)
		return nil
	})
	ctx = writemark.WithFence(ctx, func(key string) error {
		return errors.New("lease ended: " + key + " not written")
	})
	if err := writemark.From(ctx)(ctx, "k1"); err == nil {
		fmt.Println("marked")
	}
	fmt.Println(writemark.FenceFrom(ctx)("k1"))
	fmt.Println(writemark.From(context.Background()) == nil, writemark.FenceFrom(context.Background()) == nil)
	// Output:
	// mark k1
	// marked
	// lease ended: k1 not written
	// true true
}
