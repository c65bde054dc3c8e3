package mcptool

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestClashingFieldsNamed: issue 23 item 13. Sending both text and
// template answered "oneOf: validated against both <anonymous schema> and
// <anonymous schema>"; the error names the fields instead.
func TestClashingFieldsNamed(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(t0)
	cs := connect(t, &fakeQueue{clk: clk}, clk, 0)
	for _, tc := range []struct {
		name  string
		args  map[string]any
		words []string
	}{
		{"text and template", map[string]any{"to": "+237690000001", "text": "hi", "template": map[string]any{"name": "a", "language": "en"}}, []string{"text", "template"}},
		{"all three", map[string]any{"to": "+237690000001", "text": "hi", "template": map[string]any{"name": "a", "language": "en"},
			"buttons": map[string]any{"body": "b", "buttons": []any{map[string]any{"id": "1", "title": "t"}}}}, []string{"text", "template", "buttons"}},
		{"no content", map[string]any{"to": "+237690000001"}, []string{"text", "template", "buttons"}},
		{"both deadlines", map[string]any{"to": "+237690000001", "text": "hi", "max_delay_ms": 1000, "expires_at": stamp(t0)}, []string{"max_delay_ms", "expires_at"}},
	} {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: SendToolName, Arguments: tc.args})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: error %v, want invalid params", tc.name, err)
			continue
		}
		for _, w := range tc.words {
			if !strings.Contains(we.Message, w) {
				t.Errorf("%s: %q does not name %s", tc.name, we.Message, w)
			}
		}
		if strings.Contains(we.Message, "anonymous schema") || strings.Contains(we.Message, "oneOf") {
			t.Errorf("%s: %q speaks in schema terms", tc.name, we.Message)
		}
	}
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: StatusToolName, Arguments: map[string]any{}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || !strings.Contains(we.Message, "operation_id") || !strings.Contains(we.Message, "idempotency_key") || strings.Contains(we.Message, "anyOf") {
		t.Errorf("status without a name: %v", err)
	}
}

// TestOutputSchemas: the output schemas say which fields are always there
// and list the values of status, code and send_state.
func TestOutputSchemas(t *testing.T) {
	clk := clock.NewMock()
	cs := connect(t, &fakeQueue{clk: clk}, clk, 0)
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	codes := []any{CodeBackpressure, CodeQueueFull, CodeMessageExpired, CodeInvalidMessage, CodeWindowClosed, CodeNotDeliverable,
		CodeOutcomeUnknown, CodeSendFailed, CodeUnavailable, CodeIdempotencyConflict, CodeUnknownOperation}
	for _, tool := range lt.Tools {
		raw, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		wantStatus := []any{StatusAccepted, StatusQueued}
		if tool.Name == StatusToolName {
			wantStatus = []any{stateQueued, stateSending, stateAccepted, stateSubmittedUnknown, stateDelivered, stateRead, stateFailed, stateExpired}
		}
		p := s.Properties
		if p["status"] == nil || !sameSet(p["status"].Enum, wantStatus) {
			t.Errorf("%s: status enum %v, want %v", tool.Name, p["status"], wantStatus)
		}
		if p["code"] == nil || !subset(p["code"].Enum, codes) || len(p["code"].Enum) == 0 {
			t.Errorf("%s: code enum %v", tool.Name, p["code"])
		}
		if p["send_state"] == nil || len(p["send_state"].Enum) == 0 {
			t.Errorf("%s: send_state has no enum", tool.Name)
		}
		if len(s.Required) == 0 && len(s.AnyOf) == 0 && len(s.OneOf) == 0 {
			t.Errorf("%s: no field is required", tool.Name)
		}
	}
}

func sameSet(a, b []any) bool { return len(a) == len(b) && subset(a, b) }

func subset(a, b []any) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
