package webhook_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/cloudapi/webhook"
)

// strictNotification mirrors the wave-1 decoding: encoding/json into plain
// structs, which rejects the whole body on one field of the wrong type.
type strictNotification struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string `json:"field"`
			Value struct {
				Messages []struct {
					From      string `json:"from"`
					ID        string `json:"id"`
					Timestamp string `json:"timestamp"`
					Type      string `json:"type"`
					Text      *struct {
						Body string `json:"body"`
					} `json:"text"`
				} `json:"messages"`
				Statuses []struct {
					ID        string `json:"id"`
					Status    string `json:"status"`
					Timestamp string `json:"timestamp"`
				} `json:"statuses"`
			} `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

// BenchmarkParseNotification compares the lenient, lossless decoder with a
// strict encoding/json decode of the same body (the baseline), interleaved:
// with -count N each round runs both.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{100, 8000} { // about 11 KB and 3 MB
		b.Run(strconv.Itoa(n)+"msgs", func(b *testing.B) { benchParse(b, n) })
	}
}

func benchParse(b *testing.B, count int) {
	var msgs []string
	for i := range count {
		msgs = append(msgs, `{"from":"237690000001","id":"wamid.`+strconv.Itoa(i)+`","timestamp":"1767225601","type":"text","text":{"body":"hello there"}}`)
	}
	body := []byte(envelope("messages", messagesValue(`"contacts":[{"profile":{"name":"Ada"},"wa_id":"237690000001"}],"messages":[`+strings.Join(msgs, ",")+`]`)))
	b.Run("lenient", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := webhook.Parse(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strict-baseline", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var n strictNotification
			if err := json.Unmarshal(body, &n); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkServeHTTP is a 3 MB batch of 8,000 new messages through the
// handler (signature, decoding, de-duplication by ID and content, delivery)
// against Parse alone, interleaved.
func BenchmarkServeHTTP(b *testing.B) {
	var msgs []string
	for i := range 8000 {
		msgs = append(msgs, `{"from":"237690000001","id":"wamid.`+strconv.Itoa(i)+`","timestamp":"1767225601","type":"text","text":{"body":"`+strings.Repeat("x", 280)+`"}}`)
	}
	body := envelope("messages", messagesValue(`"messages":[`+strings.Join(msgs, ",")+`]`))
	sig := cloudapitest.Sign([]byte(body), appSecret)
	b.Run("handler", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			h, _ := webhook.NewHandler(appSecret, webhook.OnOther(func(context.Context, webhook.Event, *webhook.Change) error { return nil }),
				webhook.OnMessage(func(context.Context, webhook.Event, *webhook.Message) error { return nil }))
			if code := postSigned(h, body, sig); code != 200 {
				b.Fatal(code)
			}
		}
	})
	b.Run("parse-baseline", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := webhook.Parse([]byte(body)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
