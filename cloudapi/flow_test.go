package cloudapi_test

import (
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/cloudapi"
)

func TestFlowMessageIsSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		navigate := cloudapi.FlowMessage(alice, "Book your table", cloudapi.Flow{ID: "1234567890", CTA: "Book!", Token: "tok-1",
			Screen: "BOOKING", Data: map[string]any{"party": 2}}).WithHeader("Dinner", "", nil).WithFooter("Takes a minute")
		exchange := cloudapi.FlowMessage(bob, "Sign up", cloudapi.Flow{Name: "signup_flow", CTA: "Start", DataExchange: true, Draft: true})
		for _, m := range []cloudapi.Message{navigate, exchange} {
			if _, err := h.c.Send(t.Context(), number, m); err != nil {
				t.Fatalf("Send: %v", err)
			}
		}
		reqs := h.srv.Requests()
		var got struct {
			Interactive struct {
				Type   string `json:"type"`
				Header struct{ Text string }
				Footer struct{ Text string }
				Action struct {
					Name       string         `json:"name"`
					Parameters map[string]any `json:"parameters"`
				} `json:"action"`
			} `json:"interactive"`
		}
		if err := json.Unmarshal(reqs[0].Body, &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"flow_message_version": "3", "flow_token": "tok-1", "flow_id": "1234567890", "flow_cta": "Book!",
			"flow_action": "navigate", "flow_action_payload": map[string]any{"screen": "BOOKING", "data": map[string]any{"party": 2.0}}}
		if diff := cmp.Diff(want, got.Interactive.Action.Parameters); diff != "" || got.Interactive.Type != "flow" || got.Interactive.Action.Name != "flow" ||
			got.Interactive.Header.Text != "Dinner" || got.Interactive.Footer.Text != "Takes a minute" {
			t.Errorf("navigate flow %s (-want +got):\n%s", reqs[0].Body, diff)
		}
		got.Interactive.Action.Parameters = nil
		_ = json.Unmarshal(reqs[1].Body, &got)
		want = map[string]any{"flow_message_version": "3", "flow_name": "signup_flow", "flow_cta": "Start", "flow_action": "data_exchange", "mode": "draft"}
		if diff := cmp.Diff(want, got.Interactive.Action.Parameters); diff != "" {
			t.Errorf("data_exchange flow (-want +got):\n%s", diff)
		}
		// The stored form sends the same request (the outbox keeps messages as JSON).
		b, err := json.Marshal(navigate)
		if err != nil {
			t.Fatal(err)
		}
		var back cloudapi.Message
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if _, err := h.c.Send(t.Context(), number, back); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFlowMessageValidation(t *testing.T) {
	t.Parallel()
	ok := cloudapi.Flow{ID: "1", CTA: "Open", Screen: "FIRST"}
	with := func(f func(*cloudapi.Flow)) cloudapi.Flow { c := ok; f(&c); return c }
	tests := []struct {
		name  string
		msg   cloudapi.Message
		field string
	}{
		{"empty body", cloudapi.FlowMessage(alice, "", ok), "interactive.body.text"},
		{"no flow", cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.ID = "" })), "interactive.action.parameters.flow_id"},
		{"both id and name", cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.Name = "n" })), "interactive.action.parameters.flow_id"},
		{"non-numeric id", cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.ID = "abc" })), "interactive.action.parameters.flow_id"},
		{"no cta", cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.CTA = "" })), "interactive.action.parameters.flow_cta"},
		{"cta of 21", cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.CTA = "123456789012345678901" })), "interactive.action.parameters.flow_cta"},
		{"cta with emoji", cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.CTA = "Go 🚀" })), "interactive.action.parameters.flow_cta"},
		{"navigate without screen", cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.Screen = "" })), "interactive.action.parameters.flow_action_payload.screen"},
		{"empty data", cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.Data = map[string]any{} })), "interactive.action.parameters.flow_action_payload.data"},
		{"data exchange with screen", cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.DataExchange = true })), "interactive.action.parameters.flow_action_payload"},
		{"data that JSON cannot encode", cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.Data = map[string]any{"ch": make(chan int)} })), "interactive"},
		{"media header", cloudapi.FlowMessage(alice, "b", ok).WithHeader("", cloudapi.KindImage, &cloudapi.Media{ID: "1"}), "interactive.header"},
	}
	for _, tc := range tests {
		var ve *cloudapi.ValidationError
		if err := tc.msg.Validate(); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("%s: Validate = %v, want a *ValidationError on %s", tc.name, err, tc.field)
		}
	}
	for _, cta := range []string{"Go ⏰", "Ready ❤️", "🇨🇲 Cameroun"} {
		if err := cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.CTA = cta })).Validate(); err == nil {
			t.Errorf("CTA %q with an emoji passed", cta)
		}
	}
	if err := cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.CTA = "Wapace™ → go" })).Validate(); err != nil {
		t.Errorf("a CTA with ™ and an arrow: %v", err)
	}
	// 20 characters, accents included, are fine.
	if err := cloudapi.FlowMessage(alice, "b", with(func(f *cloudapi.Flow) { f.CTA = "Réservez une table !" })).Validate(); err != nil {
		t.Errorf("a 20-character CTA: %v", err)
	}
}

func TestFlowButton(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		m := cloudapi.Template(alice, "book_table", "en_US", cloudapi.Body(cloudapi.TextParam("Ada")),
			cloudapi.FlowButton(0, "booking-42", map[string]any{"party": 2}))
		if _, err := h.c.Send(t.Context(), number, m); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Template struct {
				Components []map[string]any `json:"components"`
			} `json:"template"`
		}
		_ = json.Unmarshal(h.srv.Requests()[0].Body, &got)
		want := map[string]any{"type": "button", "sub_type": "flow", "index": 0.0, "parameters": []any{
			map[string]any{"type": "action", "action": map[string]any{"flow_token": "booking-42", "flow_action_data": map[string]any{"party": 2.0}}}}}
		if diff := cmp.Diff(want, got.Template.Components[1]); diff != "" {
			t.Errorf("flow button (-want +got):\n%s", diff)
		}
	})
	for name, c := range map[string]cloudapi.Component{
		"empty data":          cloudapi.FlowButton(0, "t", map[string]any{}),
		"action on a url one": {Type: "button", SubType: "url", Index: new(int), Parameters: []cloudapi.Parameter{{Type: "action", Action: &cloudapi.FlowButtonAction{}}}},
	} {
		var ve *cloudapi.ValidationError
		if err := cloudapi.Template(alice, "t", "en", c).Validate(); !errors.As(err, &ve) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
	if err := cloudapi.Template(alice, "t", "en", cloudapi.FlowButton(1, "", nil)).Validate(); err != nil {
		t.Errorf("a flow button without token or data: %v", err)
	}
}
