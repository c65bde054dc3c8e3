package cloudapi

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/wapace/wapace/internal/phone"
	"pgregory.net/rapid"
)

// encodeForModel is the request body as it was first built: a map printed
// by json.Marshal. encodeFor must print the same bytes.
func encodeForModel(m Message, to phone.Recipient, callbackData string, marketing bool) ([]byte, error) {
	if m.kind == KindRead {
		return json.Marshal(m.payload)
	}
	req := map[string]any{
		"messaging_product": "whatsapp",
		"recipient_type":    "individual",
		"type":              string(m.kind),
		string(m.kind):      m.payload,
	}
	if to.IsBSUID() {
		req["recipient"] = to.String()
	} else {
		req["to"] = to.String()
	}
	if m.ReplyTo != "" {
		req["context"] = map[string]string{"message_id": m.ReplyTo}
	}
	if callbackData != "" && m.kind != KindReaction {
		req["biz_opaque_callback_data"] = callbackData
	}
	if marketing && m.ProductPolicy != "" {
		req["product_policy"] = string(m.ProductPolicy)
	}
	if marketing && m.ActivitySharing != nil {
		req["message_activity_sharing"] = *m.ActivitySharing
	}
	return json.Marshal(req)
}

func TestEncodeForMatchesTheMapEncoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		str := rapid.OneOf(rapid.SampledFrom([]string{"", "x", "winter_sale:237690000001", `a"b\c`, "<b>&</b>", "é✓😀", "a\u2028b", "\x00\x1f", "\xff\xfe bad", "line\nbreak"}), rapid.String())
		toStr := rapid.SampledFrom([]string{"+237 690 00 00 01", "237690000002", "US.13491208655302741918", "CO.ENT.99"}).Draw(t, "to")
		text := str.Draw(t, "text")
		var m Message
		switch rapid.IntRange(0, 8).Draw(t, "kind") {
		case 0:
			m = Text(toStr, text)
		case 1:
			m = Template(toStr, "winter_sale", "en", Body(TextParam(text), NamedTextParam("n", text)), URLButton(0, text))
		case 2:
			m = Image(toStr, Media{Link: "https://example.com/" + text, Caption: text})
		case 3:
			m = Buttons(toStr, text, Button{ID: "a", Title: "A"}, Button{ID: "b", Title: text})
		case 4:
			m = Location(toStr, rapid.Float64().Draw(t, "lat"), 2.5, text, text)
		case 5:
			m = Reaction(toStr, "wamid.X"+text, "👍")
		case 6:
			m = MarkRead("wamid."+text, rapid.Bool().Draw(t, "typing"))
		case 7:
			m = TextWithPreview(toStr, text)
		case 8:
			m = Location(toStr, math.NaN(), 1, "n", "a")
		}
		m.ReplyTo = rapid.SampledFrom([]string{"", "wamid.R", text}).Draw(t, "replyTo")
		if rapid.Bool().Draw(t, "policy") {
			m.ProductPolicy = PolicyStrict
		}
		if rapid.Bool().Draw(t, "sharing") {
			v := rapid.Bool().Draw(t, "sharingValue")
			m.ActivitySharing = &v
		}
		to, err := phone.ParseTo(toStr)
		if err != nil {
			t.Fatalf("parse %q: %v", toStr, err)
		}
		cb := str.Draw(t, "callback")
		marketing := rapid.Bool().Draw(t, "marketing")
		want, wantErr := encodeForModel(m, to, cb, marketing)
		got, gotErr := m.encodeFor(to, cb, marketing)
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("errors: model %v, encodeFor %v", wantErr, gotErr)
		}
		if wantErr != nil {
			if !strings.Contains(gotErr.Error(), strings.TrimPrefix(wantErr.Error(), "json: ")) {
				t.Fatalf("error %q does not carry the model's %q", gotErr, wantErr)
			}
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("body\n got %s\nwant %s", got, want)
		}
	})
}
