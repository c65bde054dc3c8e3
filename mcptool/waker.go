package mcptool

import (
	"sync"

	"github.com/wapace/wapace/outbox"
)

// A Waker wakes the tool calls waiting on a message as soon as the outbox
// records a transition for it, rather than at their next read of the outbox
// (Config.PollInterval). Pass its Observe method to outbox.WithObserver and
// the Waker to Config.Waker:
//
//	wk := new(mcptool.Waker)
//	ob, err := outbox.Open(ctx, dsn, outbox.WithObserver(wk.Observe))
//	err = mcptool.Register(server, mcptool.Config{Outbox: ob, Waker: wk, ...})
//
// The zero value is ready to use. A Waker only hears of transitions recorded
// by its own process; calls keep reading the outbox at PollInterval for
// the others. It is safe for concurrent use by multiple goroutines.
type Waker struct {
	mu      sync.Mutex                        // protects waiting
	waiting map[string]map[chan struct{}]bool // by idempotency key
}

// Observe wakes the calls waiting on e's message. It never blocks. On a
// nil Waker it does nothing.
func (w *Waker) Observe(e outbox.Event) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.waiting[e.Key] {
		select {
		case ch <- struct{}{}:
		default: // already woken
		}
	}
}

// watch returns a channel that receives after each transition of key's
// message, and a function that stops watching. A nil Waker watches nothing.
func (w *Waker) watch(key string) (<-chan struct{}, func()) {
	if w == nil {
		return nil, func() {}
	}
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.waiting == nil {
		w.waiting = map[string]map[chan struct{}]bool{}
	}
	if w.waiting[key] == nil {
		w.waiting[key] = map[chan struct{}]bool{}
	}
	w.waiting[key][ch] = true
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.waiting[key], ch)
		if len(w.waiting[key]) == 0 {
			delete(w.waiting, key)
		}
	}
}
