package cloudapi

import (
	"encoding/json"
	"time"
)

// messageJSON is a Message's stored form: everything needed to send it
// again after a restart (package outbox keeps messages in a database).
type messageJSON struct {
	Kind            Kind            `json:"kind"`
	To              string          `json:"to,omitempty"`
	Payload         json.RawMessage `json:"payload"`
	TargetID        string          `json:"target_id,omitempty"`
	ExpiresAt       *time.Time      `json:"expires_at,omitempty"`
	IdempotencyKey  string          `json:"idempotency_key,omitempty"`
	ReplyTo         string          `json:"reply_to,omitempty"`
	Category        Category        `json:"category,omitempty"`
	InServiceWindow bool            `json:"in_service_window,omitempty"`
	ProductPolicy   ProductPolicy   `json:"product_policy,omitempty"`
	ActivitySharing *bool           `json:"message_activity_sharing,omitempty"`
}

// knownKinds are the kinds UnmarshalJSON accepts.
var knownKinds = map[Kind]bool{
	KindText: true, KindTemplate: true, KindImage: true, KindDocument: true, KindAudio: true,
	KindVideo: true, KindSticker: true, KindInteractive: true, KindLocation: true,
	KindReaction: true, KindRead: true,
}

// MarshalJSON encodes the message, content included, so that it can be
// stored and sent later (UnmarshalJSON reads it back). An invalid message
// (one whose Validate fails) cannot be encoded.
func (m Message) MarshalJSON() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	payload, err := m.content()
	if err != nil {
		return nil, err
	}
	j := messageJSON{Kind: m.kind, To: m.to, Payload: payload, TargetID: m.msgID,
		IdempotencyKey: m.IdempotencyKey, ReplyTo: m.ReplyTo, Category: m.Category, InServiceWindow: m.InServiceWindow,
		ProductPolicy: m.ProductPolicy, ActivitySharing: m.ActivitySharing}
	if !m.ExpiresAt.IsZero() {
		t := m.ExpiresAt
		j.ExpiresAt = &t
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes a message encoded by MarshalJSON. The content is
// kept as encoded; the result is validated as Send would, and a message
// that fails validation is an error (a *ValidationError).
func (m *Message) UnmarshalJSON(data []byte) error {
	var j messageJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	if !knownKinds[j.Kind] {
		return invalid("type", "unknown message kind")
	}
	if len(j.Payload) == 0 || j.Payload[0] != '{' {
		return invalid(string(j.Kind), "content must be a JSON object")
	}
	out := Message{kind: j.Kind, to: j.To, payload: j.Payload, msgID: j.TargetID,
		IdempotencyKey: j.IdempotencyKey, ReplyTo: j.ReplyTo, Category: j.Category, InServiceWindow: j.InServiceWindow,
		ProductPolicy: j.ProductPolicy, ActivitySharing: j.ActivitySharing}
	if j.ExpiresAt != nil {
		out.ExpiresAt = *j.ExpiresAt
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*m = out
	return nil
}
