package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
)

// oneMessage is a notification with one inbound message.
var oneMessage = envelope("messages", messagesValue(`"contacts":[{"profile":{"name":"Ada"},"wa_id":"237690000001"}],"messages":[`+fxText+`]`))

// postRecover posts body and reports the status, or 0 when the handler
// panicked (net/http then drops the connection: Meta sees no answer).
func postRecover(t *testing.T, h http.Handler, body string) (code int) {
	t.Helper()
	defer func() {
		if recover() != nil {
			code = 0
		}
	}()
	return post(t, h, body)
}

// TestPanicRedelivers: issue 23 item 1. A callback that panicked once left
// the delivery's keys marked: Meta's retry was answered 200 and the message
// reached nobody.
func TestPanicRedelivers(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	h := newHandler(t,
		webhook.OnMessage(func(context.Context, webhook.Event, *webhook.Message) error {
			if calls.Add(1) == 1 {
				panic("callback bug")
			}
			return nil
		}),
		webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
	if code := postRecover(t, h, oneMessage); code != 0 {
		t.Fatalf("first delivery = %d, want a panic", code)
	}
	if code := post(t, h, oneMessage); code != http.StatusOK || calls.Load() != 2 {
		t.Errorf("redelivery after a panic = %d with %d calls, want 200 after a second call", code, calls.Load())
	}
	if code := post(t, h, oneMessage); code != http.StatusOK || calls.Load() != 2 {
		t.Errorf("redelivery after success = %d with %d calls, want 200 without a call", code, calls.Load())
	}
}

// TestPanicInOnNotification: the same for the catch-all callback, and for
// a non-messages field (deduplicated by content).
func TestPanicInOnNotification(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	h := newHandler(t, webhook.OnNotification(func(context.Context, *webhook.Notification) error {
		if calls.Add(1) == 1 {
			panic("callback bug")
		}
		return nil
	}))
	body := envelope("message_template_status_update", otherFields["message_template_status_update"])
	if code := postRecover(t, h, body); code != 0 {
		t.Fatalf("first delivery = %d, want a panic", code)
	}
	if code := post(t, h, body); code != http.StatusOK || calls.Load() != 2 {
		t.Errorf("redelivery after a panic = %d with %d calls, want 200 after a second call", code, calls.Load())
	}
}

// TestRetryWhileFirstAttemptFails: issue 23 item 2. Meta retried while the
// first attempt was still in its callback; the retry was answered 200 with
// nothing delivered, then the first attempt failed: the status was never
// applied. A key in flight is not seen: the retry is not answered 200.
func TestRetryWhileFirstAttemptFails(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	var applied atomic.Int32
	h := newHandler(t,
		webhook.OnMessage(func(context.Context, webhook.Event, *webhook.Message) error {
			if calls.Add(1) == 1 {
				close(entered)
				<-release
				return errors.New("database down")
			}
			applied.Add(1)
			return nil
		}),
		webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
	var wg sync.WaitGroup
	var first int
	wg.Add(1)
	go func() {
		defer wg.Done()
		first = post(t, h, oneMessage)
	}()
	<-entered
	if code := post(t, h, oneMessage); code == http.StatusOK && applied.Load() == 0 {
		t.Errorf("retry while the first attempt is in its callback = 200 with nothing applied")
	} else if code < 500 && code != http.StatusOK {
		t.Errorf("retry while the first attempt is in its callback = %d, want a 5xx (or 200 once applied)", code)
	}
	close(release)
	wg.Wait()
	if first != http.StatusInternalServerError {
		t.Errorf("first attempt = %d, want 500", first)
	}
	if code := post(t, h, oneMessage); code != http.StatusOK || applied.Load() != 1 {
		t.Errorf("next retry = %d with %d applied, want 200 and 1", code, applied.Load())
	}
	if code := post(t, h, oneMessage); code != http.StatusOK || applied.Load() != 1 {
		t.Errorf("redelivery = %d with %d applied, want 200 and still 1", code, applied.Load())
	}
}

// TestInFlightOthersDelivered: a retry that carries a key in flight and
// new items delivers the new ones and answers 503; its own retry then
// finds the new items seen and the first attempt's outcome decides.
func TestInFlightOthersDelivered(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	got := map[string]int{}
	h := newHandler(t,
		webhook.OnMessage(func(_ context.Context, _ webhook.Event, m *webhook.Message) error {
			mu.Lock()
			got[m.ID]++
			n := got[m.ID]
			mu.Unlock()
			if m.ID == "wamid.TEXT" && n == 1 {
				close(entered)
				<-release
			}
			return nil
		}),
		webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
	both := envelope("messages", messagesValue(`"messages":[`+fxText+`,`+fxReply+`]`))
	done := make(chan int)
	go func() { done <- post(t, h, oneMessage) }()
	<-entered
	if code := post(t, h, both); code != http.StatusServiceUnavailable {
		t.Errorf("batch with a key in flight = %d, want 503", code)
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Errorf("first attempt = %d", code)
	}
	if code := post(t, h, both); code != http.StatusOK {
		t.Errorf("retry of the batch = %d, want 200", code)
	}
	if got["wamid.TEXT"] != 1 || got["wamid.REPLY"] != 1 {
		t.Errorf("deliveries %v, want each message once", got)
	}
}

// TestRepeatWithOtherContent: issue 22. A payload whose second change
// repeats a wamid with a different body lost the second change: a repeat
// with other content is not a duplicate. A repeat with the same content
// still is.
func TestRepeatWithOtherContent(t *testing.T) {
	t.Parallel()
	var bodies []string
	h := newHandler(t,
		webhook.OnMessage(func(_ context.Context, _ webhook.Event, m *webhook.Message) error {
			bodies = append(bodies, m.ID+"="+m.Text.Body)
			return nil
		}),
		webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
	edited := `{"from":"237690000001","id":"wamid.TEXT","timestamp":"1767225601","type":"text","text":{"body":"hello, corrected"}}`
	body := `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[` +
		`{"field":"messages","value":` + messagesValue(`"messages":[`+fxText+`]`) + `},` +
		`{"field":"messages","value":` + messagesValue(`"messages":[`+edited+`]`) + `},` +
		`{"field":"messages","value":` + messagesValue(`"messages":[`+fxText+`]`) + `}]}]}`
	if code := post(t, h, body); code != http.StatusOK {
		t.Fatalf("POST = %d", code)
	}
	if code := post(t, h, body); code != http.StatusOK {
		t.Fatalf("redelivery = %d", code)
	}
	want := []string{"wamid.TEXT=hello", "wamid.TEXT=hello, corrected"}
	if len(bodies) != len(want) || bodies[0] != want[0] || bodies[1] != want[1] {
		t.Errorf("delivered %q, want %q", bodies, want)
	}
}

// TestAcknowledgedMeansTaken: under any sequence of deliveries whose
// callbacks succeed, fail or panic, a 200 answer means every item of the
// payload was taken by a callback that returned nil, and an item is handed
// over again only while no delivery of it has been answered 200.
func TestAcknowledgedMeansTaken(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		ids := []string{"wamid.A", "wamid.B", "wamid.C", "wamid.D"}
		taken := map[string]bool{} // a callback returned nil for it
		acked := map[string]bool{} // a delivery with it was answered 200
		var fail string            // the outcome of the next callback call
		h, err := webhook.NewHandler(appSecret,
			webhook.WithDeduper(&webhook.Deduper{}),
			webhook.OnMessage(func(_ context.Context, _ webhook.Event, m *webhook.Message) error {
				if acked[m.ID] {
					t.Fatalf("%s handed over again after a 200", m.ID)
				}
				switch fail {
				case "panic":
					panic("callback bug")
				case "error":
					return errors.New("down")
				}
				taken[m.ID] = true
				return nil
			}),
			webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }))
		if err != nil {
			t.Fatal(err)
		}
		for range rapid.IntRange(1, 30).Draw(t, "deliveries") {
			subset := rapid.SliceOfNDistinct(rapid.SampledFrom(ids), 1, len(ids), rapid.ID).Draw(t, "items")
			fail = rapid.SampledFrom([]string{"", "", "error", "panic"}).Draw(t, "outcome")
			var msgs []string
			for _, id := range subset {
				msgs = append(msgs, `{"from":"237690000001","id":"`+id+`","timestamp":"1","type":"text","text":{"body":"x"}}`)
			}
			body := envelope("messages", messagesValue(`"messages":[`+strings.Join(msgs, ",")+`]`))
			code := func() (code int) {
				defer func() {
					if recover() != nil {
						code = 0
					}
				}()
				return postSigned(h, body, cloudapitest.Sign([]byte(body), appSecret))
			}()
			if code == http.StatusOK {
				for _, id := range subset {
					if !taken[id] {
						t.Fatalf("200 for a payload whose %s no callback took", id)
					}
					acked[id] = true
				}
			}
		}
	})
}

// TestZeroDeduper: the zero Deduper works, with the default bounds.
func TestZeroDeduper(t *testing.T) {
	t.Parallel()
	var d webhook.Deduper
	if d.Len() != 0 || d.Bytes() != 0 || d.Seen("a") || !d.Seen("a") || d.Len() != 1 {
		t.Error("zero Deduper does not remember keys")
	}
	d.Forget("a")
	if d.Seen("a") {
		t.Error("forgotten key still seen")
	}
}
