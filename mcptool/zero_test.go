package mcptool_test

import (
	"testing"

	"github.com/wapace/wapace/mcptool"
	"github.com/wapace/wapace/outbox"
)

// A nil *Waker watches nothing, and its Observe (passed to
// outbox.WithObserver as a method value) must not panic either.
func TestNilWakerObserve(t *testing.T) {
	var w *mcptool.Waker
	w.Observe(outbox.Event{Key: "k"})
}
