package mcptool

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
)

// The codes of tool execution errors, in the code field of their structured
// content.
const (
	// CodeBackpressure: a limit is full and the message could not go before
	// its freshness deadline (or, for delivery "sync", within the wait the
	// server allows). Nothing was sent or queued; retry_after_ms says when
	// capacity frees up.
	CodeBackpressure = "WHATSAPP_BACKPRESSURE"
	// CodeQueueFull: the outbox (or the recipient's lane) is at capacity.
	// Nothing was queued.
	CodeQueueFull = "WHATSAPP_QUEUE_FULL"
	// CodeMessageExpired: the message's freshness deadline passed before it
	// could be sent; it never will be. Regenerate the content.
	CodeMessageExpired = "WHATSAPP_MESSAGE_EXPIRED"
	// CodeInvalidMessage: the message cannot be sent as it is (too long, an
	// unusable recipient, a template Meta rejected, ...). Fix it.
	CodeInvalidMessage = "WHATSAPP_INVALID_MESSAGE"
	// CodeWindowClosed: the user has not written within 24 hours, so only
	// an approved template can reach them (Meta's 131047).
	CodeWindowClosed = "WHATSAPP_WINDOW_CLOSED"
	// CodeNotDeliverable: Meta will not deliver to this recipient (not on
	// WhatsApp, blocked, opted out of marketing, per-user marketing limit).
	CodeNotDeliverable = "WHATSAPP_NOT_DELIVERABLE"
	// CodeOutcomeUnknown: the request may have reached Meta but nothing
	// proves it was accepted. It is never resent automatically: poll
	// get_message_status, which reconciles it from status webhooks.
	CodeOutcomeUnknown = "WHATSAPP_OUTCOME_UNKNOWN"
	// CodeSendFailed: Meta refused the message for another reason (the
	// account, the token, ...).
	CodeSendFailed = "WHATSAPP_SEND_FAILED"
	// CodeUnavailable: the outbox could not be read or written. Retry with
	// the same idempotency_key: it is never sent twice.
	CodeUnavailable = "WHATSAPP_UNAVAILABLE"
	// CodeIdempotencyConflict: the idempotency key already names another
	// message (another recipient, other content). Nothing was sent or
	// queued: send this message with a new key, or repeat the first
	// message to learn its state.
	CodeIdempotencyConflict = "WHATSAPP_IDEMPOTENCY_CONFLICT"
	// CodeUnknownOperation: get_message_status knows no such message.
	CodeUnknownOperation = "WHATSAPP_UNKNOWN_OPERATION"
)

// Statuses of a successful send_whatsapp_message.
const (
	// StatusAccepted: Meta accepted the message (accepted is not delivered).
	StatusAccepted = "accepted"
	// StatusQueued: the message is in the durable outbox and will be sent
	// when capacity allows, before its deadline, or expire unsent. It has
	// not been sent.
	StatusQueued = "queued"
)

// SendResult is send_whatsapp_message's structured content. A success
// carries Status (accepted or queued), the identifiers and, when queued, the
// estimate; a tool execution error carries Code, MetaCode, Retryable,
// RetryAfterMS, ExpiresAt (when the message has a deadline) and SendState.
type SendResult struct {
	// Status is "accepted" or "queued"; empty on errors.
	Status string `json:"status,omitempty" jsonschema:"accepted (Meta accepted it; not yet delivered) or queued (not sent yet); absent on errors"`
	// MessageID is Meta's wamid, once accepted.
	MessageID string `json:"message_id,omitempty" jsonschema:"Meta's message ID (wamid), once accepted"`
	// OperationID names the message for get_message_status.
	OperationID string `json:"operation_id,omitempty" jsonschema:"names the message for get_message_status"`
	// IdempotencyKey is the message's key.
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"the message's idempotency key"`
	// EstimatedSendAt is when a queued message is expected to go (RFC 3339).
	EstimatedSendAt string `json:"estimated_send_at,omitempty" jsonschema:"RFC 3339 instant a queued message is expected to be sent"`
	// RetryAfterMS is, when queued, the expected wait; on an error, the wait
	// before capacity frees up (absent when unknown or irrelevant).
	RetryAfterMS *int64 `json:"retry_after_ms,omitempty" jsonschema:"milliseconds until a queued message is expected to go, or until a retry could succeed; absent when unknown or irrelevant"`
	// Code is an error's category (WHATSAPP_BACKPRESSURE, ...).
	Code string `json:"code,omitempty" jsonschema:"error category, such as WHATSAPP_BACKPRESSURE or WHATSAPP_QUEUE_FULL"`
	// MetaCode is Meta's error code behind the error (131056, ...), absent
	// when none.
	MetaCode *int `json:"meta_code,omitempty" jsonschema:"Meta's error code behind the error (such as 131056); absent when none"`
	// Retryable reports whether a later retry can be expected to help.
	Retryable *bool `json:"retryable,omitempty" jsonschema:"whether a later retry can be expected to help"`
	// ExpiresAt is the message's freshness deadline (RFC 3339), if any.
	ExpiresAt string `json:"expires_at,omitempty" jsonschema:"the message's freshness deadline, RFC 3339"`
	// SendState is, on errors, not_submitted (not sent: safe to send
	// again), queued, or submitted_unknown (may have been sent: never resend).
	SendState string `json:"send_state,omitempty" jsonschema:"on errors: not_submitted, queued or submitted_unknown"`
}

// StatusResult is get_message_status's structured content.
type StatusResult struct {
	// Status is the outbox state: queued, sending, accepted,
	// submitted_unknown, delivered, read, failed or expired.
	Status string `json:"status,omitempty" jsonschema:"queued, sending, accepted, submitted_unknown, delivered, read, failed or expired"`
	// OperationID and IdempotencyKey name the message.
	OperationID    string `json:"operation_id,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// MessageID is Meta's wamid, once known.
	MessageID string `json:"message_id,omitempty"`
	// Attempts counts the requests made for the message.
	Attempts int `json:"attempts,omitempty"`
	// ExpiresAt is the message's freshness deadline.
	ExpiresAt string `json:"expires_at,omitempty"`
	// Reason says why a message failed or expired, or how an unknown
	// outcome was reconciled.
	Reason string `json:"reason,omitempty" jsonschema:"why it failed or expired, or how an unknown outcome was reconciled"`
	// Transitions are the states the message went through, with instants.
	Transitions []Transition `json:"transitions,omitempty" jsonschema:"every state the message went through, with its instant"`
	// Code, MetaCode, Retryable and SendState describe an error (failed,
	// expired or unknown messages, or no such message).
	Code      string `json:"code,omitempty"`
	MetaCode  *int   `json:"meta_code,omitempty"`
	Retryable *bool  `json:"retryable,omitempty"`
	SendState string `json:"send_state,omitempty"`
}

// Transition is one state change of a message.
type Transition struct {
	// State is the state entered.
	State string `json:"state"`
	// At is when, RFC 3339.
	At string `json:"at"`
	// Reason says why, for dead letters and unknown outcomes, and how an
	// unknown outcome was reconciled.
	Reason string `json:"reason,omitempty"`
}

// toolError is a tool execution error: a sentence for the model and the
// structured fields.
type toolError struct {
	summary string
	res     SendResult
}

// ms returns d in whole milliseconds, rounded up, never negative.
func ms(d time.Duration) *int64 {
	v := int64((d + time.Millisecond - 1) / time.Millisecond)
	if v < 0 {
		v = 0
	}
	return &v
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func ptr[T any](v T) *T { return &v }

// failure builds a tool error: code, retryable and send_state always;
// meta_code only when a Meta code is behind it, retry_after_ms only when
// there is a wait to report.
func failure(code string, meta errcodes.Code, retryable bool, retryAfter time.Duration, expires time.Time, state cloudapi.SendState, key, op, summary string) toolError {
	res := SendResult{
		Code:           code,
		Retryable:      ptr(retryable),
		ExpiresAt:      stamp(expires),
		SendState:      string(state),
		IdempotencyKey: key,
		OperationID:    op,
	}
	if meta != 0 {
		res.MetaCode = ptr(int(meta))
	}
	if retryAfter > 0 {
		res.RetryAfterMS = ms(retryAfter)
	}
	return toolError{summary: summary, res: res}
}

// errorCodes are the values of the code field.
var errorCodes = []any{CodeBackpressure, CodeQueueFull, CodeMessageExpired, CodeInvalidMessage, CodeWindowClosed,
	CodeNotDeliverable, CodeOutcomeUnknown, CodeSendFailed, CodeUnavailable, CodeIdempotencyConflict, CodeUnknownOperation}

// tweakSchema lists the values of status, code and send_state, and says
// that a result is a success (status) or an error (code and send_state).
func (SendResult) tweakSchema(s *jsonschema.Schema) {
	p := s.Properties
	p["status"].Enum = []any{StatusAccepted, StatusQueued}
	p["code"].Enum = errorCodes
	p["send_state"].Enum = []any{string(cloudapi.StateNotSubmitted), string(cloudapi.StateQueued), string(cloudapi.StateSubmittedUnknown)}
	s.AnyOf = []*jsonschema.Schema{{Required: []string{"status"}}, {Required: []string{"code", "send_state"}}}
}

// tweakSchema lists the values of status, code and send_state, and says
// that a result has a status or, when no message could be read, a code.
func (StatusResult) tweakSchema(s *jsonschema.Schema) {
	p := s.Properties
	p["status"].Enum = []any{stateQueued, stateSending, stateAccepted, stateSubmittedUnknown, stateDelivered, stateRead, stateFailed, stateExpired}
	p["code"].Enum = errorCodes
	p["send_state"].Enum = []any{string(cloudapi.StateNotSubmitted), string(cloudapi.StateQueued), string(cloudapi.StateSubmittedUnknown)}
	s.AnyOf = []*jsonschema.Schema{{Required: []string{"status"}}, {Required: []string{"code"}}}
}

// metaFailure classifies a code Meta answered for a message that was
// refused (not sent), from errcodes' class alone: the service window's
// code (131047) has its own result; a code that concerns the recipient is
// not deliverable; a request or template that waiting cannot fix is an
// invalid message.
func metaFailure(c errcodes.Code, expires time.Time, key, op string) toolError {
	cl := errcodes.Lookup(c)
	state := cloudapi.StateNotSubmitted
	switch {
	case c == errcodes.ReEngagement:
		return failure(CodeWindowClosed, c, false, 0, expires, state, key, op,
			"Not sent: the user has not written in the last 24 hours, so only an approved template can reach them.")
	case cl.Scope == errcodes.ScopeRecipient:
		return failure(CodeNotDeliverable, c, false, cl.Wait, expires, state, key, op,
			fmt.Sprintf("Not sent: WhatsApp will not deliver this message to this recipient (Meta error %d: %s).", c, cl.Title))
	case (cl.Scope == errcodes.ScopeRequest || cl.Scope == errcodes.ScopeTemplate) && !cl.Retryable && !cl.OutcomeUnknown:
		return failure(CodeInvalidMessage, c, false, 0, expires, state, key, op,
			fmt.Sprintf("Not sent: Meta rejected the message as invalid (error %d: %s). Fix it before sending again.", c, cl.Title))
	}
	if cl.OutcomeUnknown {
		return unknownOutcome(c, expires, key, op)
	}
	if cl.Throttling && cl.Retryable {
		return failure(CodeBackpressure, c, true, cl.Wait, expires, state, key, op,
			fmt.Sprintf("Not sent: a WhatsApp rate limit is full (Meta error %d).", c))
	}
	return failure(CodeSendFailed, c, cl.Retryable, cl.Wait, expires, state, key, op,
		fmt.Sprintf("Not sent: Meta refused the message (error %d: %s).", c, cl.Title))
}

func unknownOutcome(c errcodes.Code, expires time.Time, key, op string) toolError {
	return failure(CodeOutcomeUnknown, c, false, 0, expires, cloudapi.StateSubmittedUnknown, key, op,
		"The request may have reached WhatsApp but nothing proves it was accepted. It will not be resent: poll get_message_status, which reconciles it from delivery reports.")
}

// fromError classifies an error that kept a message from being queued or
// sent: business and capacity failures become tool errors; ok is false for
// errors that are not about the message (the outbox is unreachable).
func fromError(err error, expires time.Time, key, op string) toolError {
	var (
		ve *cloudapi.ValidationError
		bp *cloudapi.BackpressureError
		me *errcodes.Error
	)
	switch {
	case errors.Is(err, cloudapi.ErrIdempotencyConflict):
		return toolError{summary: "Not sent: this idempotency_key already names another message (another recipient or other content). Send this one with a new idempotency_key; repeating the first message with its key reports that message's state.",
			res: SendResult{Code: CodeIdempotencyConflict, Retryable: ptr(false), ExpiresAt: stamp(expires),
				SendState: string(cloudapi.StateNotSubmitted), IdempotencyKey: key, OperationID: op}}
	case errors.As(err, &ve):
		return failure(CodeInvalidMessage, 0, false, 0, expires, cloudapi.StateNotSubmitted, key, op,
			fmt.Sprintf("Not sent: the message is invalid (%s: %s). Fix it before sending again.", ve.Field, ve.Reason))
	case errors.Is(err, cloudapi.ErrUnknownCategory):
		return failure(CodeInvalidMessage, 0, false, 0, expires, cloudapi.StateNotSubmitted, key, op,
			"Not sent: this template's category is unknown, so it cannot be routed (marketing templates go to the Marketing Messages API). Give its category, or refresh the template list.")
	case errors.Is(err, errLaneFull):
		return failure(CodeQueueFull, 0, true, retryAfterOf(err), expires, cloudapi.StateNotSubmitted, key, op,
			"Not queued: this recipient already has as many messages waiting as the outbox allows. Nothing was sent; wait for them to go, or tell the user.")
	case errors.Is(err, errQueueFull):
		return failure(CodeQueueFull, 0, true, retryAfterOf(err), expires, cloudapi.StateNotSubmitted, key, op,
			"Not queued: the outbox is full. Nothing was sent; try again later or tell the user.")
	case errors.Is(err, errExpired):
		return failure(CodeMessageExpired, 0, false, 0, expires, cloudapi.StateNotSubmitted, key, op,
			"Not sent: the message's freshness deadline has passed, and stale content is never sent late. Regenerate it if it still matters.")
	case errors.Is(err, errcodes.ReEngagement):
		return metaFailure(errcodes.ReEngagement, expires, key, op)
	case errors.As(err, &bp):
		if bp.ExpiresAt.After(expires) || expires.IsZero() {
			expires = bp.ExpiresAt
		}
		return failure(CodeBackpressure, bp.Code, true, retryAfterOf(err), expires, cloudapi.StateNotSubmitted, key, op,
			fmt.Sprintf("Not sent and not queued: %s is full and the message could not go before its deadline. Capacity frees up in about %s.", limitName(bp.Limit), retryAfterOf(err).Round(time.Millisecond)))
	case errors.Is(err, cloudapi.ErrSubmittedUnknown):
		var c errcodes.Code
		if errors.As(err, &me) {
			c = me.Code
		}
		return unknownOutcome(c, expires, key, op)
	case errors.As(err, &me):
		return metaFailure(me.Code, expires, key, op)
	}
	var c errcodes.Code
	if errors.As(err, &c) {
		return metaFailure(c, expires, key, op)
	}
	return failure(CodeUnavailable, 0, true, 0, expires, cloudapi.StateNotSubmitted, key, op,
		"Not sent: the outbox is unavailable. Retry with the same idempotency_key; it will never be sent twice.")
}

// limitName says which limit a hold stands for, for the model.
func limitName(h errcodes.Hold) string {
	switch h {
	case errcodes.HoldPair:
		return "the pair rate limit for this recipient (about 1 message every 6 s)"
	case errcodes.HoldPhoneNumber:
		return "the business number's throughput"
	case errcodes.HoldApp, errcodes.HoldWABA:
		return "the API call budget"
	case errcodes.HoldTier:
		return "the messaging limit (unique users per 24 h)"
	}
	return "a sending limit"
}

// retryAfterOf returns the wait an error reports, or 0.
func retryAfterOf(err error) time.Duration {
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		return ra.RetryAfter()
	}
	return 0
}
