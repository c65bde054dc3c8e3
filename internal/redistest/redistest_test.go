package redistest_test

import (
	"testing"

	"github.com/wapace/wapace/internal/redistest"
)

func TestClientAnswers(t *testing.T) {
	c := redistest.Client(t)
	if err := c.Set(t.Context(), redistest.Prefix(t)+"k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestStartedServerStops(t *testing.T) {
	s := redistest.Start(t)
	s.Stop()
	s.Stop() // idempotent
}
