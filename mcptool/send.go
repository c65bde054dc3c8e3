package mcptool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
)

// Defaults of a Config.
const (
	// DefaultSyncWait bounds how long a call waits for Meta's answer.
	DefaultSyncWait = 10 * time.Second
	// DefaultReplyTTL is the freshness of a free-form message (or a reply)
	// sent without a deadline: conversational content goes stale in
	// minutes, long before Meta's 30-day time-to-live.
	DefaultReplyTTL = 2 * time.Minute
	// DefaultPollInterval is how often a waiting call reads the outbox.
	DefaultPollInterval = 20 * time.Millisecond
	// DefaultAcceptWait is how long a delivery "async" call waits for a
	// message that can go now to be accepted before it reports it queued.
	DefaultAcceptWait = time.Second
)

// Tool names.
const (
	SendToolName   = "send_whatsapp_message"
	StatusToolName = "get_message_status"
)

// tools holds the configuration the handlers share.
type tools struct {
	q        queue
	from     []string
	clk      clock.Clock
	syncWait time.Duration
	// acceptWait bounds an async call's wait for a message due now.
	acceptWait time.Duration
	client     *cloudapi.Client // nil: the number's hold is not known
	waker      *Waker           // nil: waits only poll
	replyTTL   time.Duration
	poll       time.Duration
}

// register adds both tools to s.
func (t *tools) register(s *mcp.Server) error {
	err := addTool[SendArgs, SendResult](s, &mcp.Tool{
		Name:  SendToolName,
		Title: "Send a WhatsApp message",
		Description: "Send a WhatsApp message (text, approved template, or reply buttons) from the business. " +
			"The result says exactly what happened: status accepted (Meta took it; delivery comes later) or queued " +
			"(stored durably, not sent yet: it will go when capacity allows, or expire unsent at its deadline). " +
			"Failures are errors with a code (WHATSAPP_BACKPRESSURE, WHATSAPP_QUEUE_FULL, WHATSAPP_MESSAGE_EXPIRED, " +
			"WHATSAPP_INVALID_MESSAGE, WHATSAPP_WINDOW_CLOSED, WHATSAPP_NOT_DELIVERABLE, WHATSAPP_OUTCOME_UNKNOWN, " +
			"WHATSAPP_IDEMPOTENCY_CONFLICT, ...), " +
			"meta_code, retryable, retry_after_ms, expires_at and send_state. Give time-sensitive content a deadline " +
			"(max_delay_ms or expires_at) and reuse idempotency_key when retrying: a message is never sent twice.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(true), DestructiveHint: ptr(false)},
	}, t.sendSchema, t.send)
	if err != nil {
		return err
	}
	return addTool[StatusArgs, StatusResult](s, &mcp.Tool{
		Name:  StatusToolName,
		Title: "Get a WhatsApp message's status",
		Description: "The state of a message sent with send_whatsapp_message, by operation_id or idempotency_key: " +
			"queued, sending, accepted, submitted_unknown, delivered, read, failed or expired, with the instant of each transition.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, statusSchema, t.status)
}

// sendSchema refines the inferred input schema: delivery's and from's
// values, max_delay_ms's bound, expires_at's format.
func (t *tools) sendSchema(s *jsonschema.Schema) {
	p := s.Properties
	p["delivery"].Enum = []any{deliverySync, deliveryAsync}
	from := make([]any, len(t.from))
	for i, f := range t.from {
		from[i] = f
	}
	p["from"].Enum = from
	p["max_delay_ms"].Type, p["max_delay_ms"].Types = "integer", nil
	p["max_delay_ms"].Minimum = ptr(0.0)
	p["expires_at"].Format = "date-time"
	p["to"].MinLength = ptr(1)
	// Exactly one content; at most one way to give the deadline.
	s.OneOf = []*jsonschema.Schema{{Required: []string{"text"}}, {Required: []string{"template"}}, {Required: []string{"buttons"}}}
	s.Not = &jsonschema.Schema{Required: []string{"max_delay_ms", "expires_at"}}
}

// statusSchema says that one of the two names is required.
func statusSchema(s *jsonschema.Schema) {
	s.AnyOf = []*jsonschema.Schema{{Required: []string{"operation_id"}}, {Required: []string{"idempotency_key"}}}
}

// send is send_whatsapp_message.
func (t *tools) send(ctx context.Context, a SendArgs) (outcome, error) {
	now := t.clk.Now()
	r, err := parseSend(a, t.from, now, t.replyTTL)
	if err != nil {
		return outcome{}, err
	}
	m := r.msg
	if m.IdempotencyKey == "" {
		m.IdempotencyKey = newKey()
	} else {
		// A key already used names the first message: the same message
		// again (whatever this call's deadline or delivery) reports its
		// state and sends nothing; another message is refused.
		it, err := t.q.get(ctx, m.IdempotencyKey)
		switch {
		case err == nil:
			// The queue decides whether m is the stored message: for a
			// stored key it stores nothing, and answers its ticket or a
			// conflict.
			if _, err := t.q.enqueue(ctx, r.from, m); errors.Is(err, cloudapi.ErrIdempotencyConflict) {
				return t.fail(fromError(err, r.deadline, m.IdempotencyKey, "")), nil
			}
			return t.existing(ctx, it)
		case !errors.Is(err, errNotFound):
			if ctx.Err() != nil {
				return outcome{}, ctx.Err()
			}
			return t.fail(fromError(err, r.deadline, m.IdempotencyKey, "")), nil
		}
	}
	key := m.IdempotencyKey
	if err := m.Validate(); err != nil {
		return t.fail(fromError(err, r.deadline, key, "")), nil
	}
	if !r.deadline.IsZero() && !now.Before(r.deadline) {
		return t.fail(fromError(errExpired, r.deadline, key, "")), nil
	}
	// A sync call never leaves a message behind that could be sent after
	// it returned: the message's deadline is capped at the end of the wait,
	// so the outbox rejects it at once if it cannot go within the wait, and
	// expires it unsent if it is still queued then.
	stop := now.Add(t.syncWait)
	if r.sync && (m.ExpiresAt.IsZero() || stop.Before(m.ExpiresAt)) {
		m.ExpiresAt = stop
		r.capped = true
	}
	if !m.ExpiresAt.IsZero() && m.ExpiresAt.Before(stop) {
		stop = m.ExpiresAt
	}

	// Known waits the outbox's estimate does not count (the pair's debt,
	// the number's hold): a message that cannot go before its deadline for
	// them alone is refused now, unstored.
	kw := t.knownWait(now, r.from, m)
	debt := kw.Wait
	if !m.ExpiresAt.IsZero() && now.Add(debt).After(m.ExpiresAt) {
		kw.ExpiresAt, kw.IdempotencyKey = m.ExpiresAt, key
		return t.fail(t.backpressure(&kw, r, key)), nil
	}

	tk, err := t.q.enqueue(ctx, r.from, m)
	if err != nil {
		if errors.Is(err, errExpired) {
			// The wait it would need passes its deadline: backpressure.
			var bp *cloudapi.BackpressureError
			if errors.As(err, &bp) {
				return t.fail(t.backpressure(bp, r, key)), nil
			}
		}
		return t.fail(fromError(err, r.deadline, key, "")), nil
	}
	key, op := tk.key, tk.operationID
	estimate := tk.estimatedSendAt
	if debt > 0 && !estimate.IsZero() {
		estimate = estimate.Add(debt)
	}
	if tk.state != stateQueued {
		// Stored meanwhile by another call with the same key.
		it, err := t.q.get(ctx, key)
		if err != nil {
			return t.fail(unreadable(err, r.deadline, key, op)), nil
		}
		return t.existing(ctx, it)
	}
	if !r.sync {
		// Async: a message that cannot go now is queued at once; one that
		// can gets acceptWait to be accepted, and is queued otherwise.
		if estimate.After(now.Add(t.acceptWait)) {
			return t.queued(now, estimate, r.deadline, key, op), nil
		}
		if s := now.Add(t.acceptWait); s.Before(stop) {
			stop = s
		}
	}
	return t.await(ctx, r, key, op, estimate, stop)
}

// backpressure describes a message refused because a limit would make it
// wait past its deadline (or, for delivery sync, past the call's wait).
func (t *tools) backpressure(bp *cloudapi.BackpressureError, r request, key string) toolError {
	te := fromError(bp, r.deadline, key, "")
	te.res.ExpiresAt = stamp(r.deadline)
	if r.capped {
		te.summary = fmt.Sprintf("Not sent and not queued: delivery sync cannot wait long enough (%s is busy for about %s; this server waits at most %s). Retry later, or use delivery async.",
			limitName(bp.Limit), bp.Wait.Round(time.Millisecond), t.syncWait)
	}
	return te
}

// knownWait returns the longest wait the limits already impose on a
// message from from to m's recipient, as a BackpressureError's limit, code
// and wait (zero when nothing is known to wait). With Config.Client it is
// the Client's own read-only admission query ([cloudapi.Client.Admission]:
// the pair's debt or 131056 hold, the number's hold after 130429, 131057
// or 2494100, the call budget's hold), asked of the limits the send will
// meet; without one, nothing is known.
func (t *tools) knownWait(now time.Time, from string, m cloudapi.Message) cloudapi.BackpressureError {
	var w cloudapi.BackpressureError
	if m.Kind() == cloudapi.KindRead {
		return w
	}
	if t.client != nil {
		if a, err := t.client.Admission(now, from, m.To(), 1); err == nil && a.At.After(now) {
			w = cloudapi.BackpressureError{Limit: a.Limit, Code: a.Code, Wait: a.At.Sub(now)}
		}
	}
	return w
}

// existing reports the state of a message stored by an earlier call with
// the same idempotency key, without waiting: its deadline and wait were
// that call's.
func (t *tools) existing(ctx context.Context, it item) (outcome, error) {
	r := request{deadline: it.expiresAt}
	return t.await(ctx, r, it.key, it.operationID, t.clk.Now(), time.Time{})
}

// await reads the outbox until the message is settled or stop passes,
// again at every transition the Waker reports and every poll interval.
func (t *tools) await(ctx context.Context, r request, key, op string, estimate, stop time.Time) (outcome, error) {
	woken, unwatch := t.waker.watch(key)
	defer unwatch()
	for {
		// The instant before the read: the state read is at least that
		// recent. (Read after it, a message seen queued just before the
		// wait's end, then claimed and sent, would be reported dropped.)
		now := t.clk.Now()
		it, err := t.q.get(ctx, key)
		if err != nil {
			if ctx.Err() != nil {
				return outcome{}, ctx.Err()
			}
			return t.fail(unreadable(err, r.deadline, key, op)), nil
		}
		switch it.state {
		case stateAccepted, stateDelivered, stateRead:
			return outcome{
				summary: fmt.Sprintf("Accepted by WhatsApp (message_id %s). Accepted is not delivered yet: get_message_status reports delivery.", it.messageID),
				value: SendResult{Status: StatusAccepted, MessageID: it.messageID, OperationID: op,
					IdempotencyKey: key, ExpiresAt: stamp(r.deadline)},
			}, nil
		case stateFailed:
			return t.fail(itemFailure(it, r.deadline, key, op)), nil
		case stateExpired:
			te := failure(CodeMessageExpired, 0, false, 0, r.deadline, cloudapi.StateNotSubmitted, key, op,
				"Not sent: the message could not go before its deadline and was dropped unsent. Regenerate it if it still matters.")
			if r.capped {
				te.res.Code, te.res.Retryable = CodeBackpressure, ptr(true)
				te.summary = fmt.Sprintf("Not sent: it could not go within the %s that delivery sync waits, and was dropped unsent. Retry later with a new idempotency_key, or use delivery async.", t.syncWait)
			}
			return t.fail(te), nil
		case stateSubmittedUnknown:
			return t.fail(unknownOutcome(errcodes.Code(it.code), r.deadline, key, op)), nil
		}
		if !now.Before(stop) {
			queuedPastDeadline := it.state == stateQueued && !r.deadline.IsZero() && !now.Before(r.deadline)
			switch {
			case queuedPastDeadline && !r.capped:
				// Its own deadline passed while it waited: the outbox
				// expires it without sending it.
				return t.fail(failure(CodeMessageExpired, 0, false, 0, r.deadline, cloudapi.StateNotSubmitted, key, op,
					"Not sent: its deadline passed before it could go, and it will be dropped unsent. Regenerate it if it still matters.")), nil
			case !r.sync && it.state == stateSending:
				// Still queued as far as the outbox's outcome goes, but
				// the request may already have been accepted.
				o := t.queued(now, now, r.deadline, key, op)
				o.summary = "In flight: the request is being sent now and may already be accepted; it will not be sent twice. Check with get_message_status."
				return o, nil
			case !r.sync:
				return t.queued(now, later(estimate, now), r.deadline, key, op), nil
			case it.state == stateSending:
				// In flight as the wait ends: its outcome is not known yet.
				return t.fail(failure(CodeOutcomeUnknown, 0, false, 0, r.deadline, cloudapi.StateSubmittedUnknown, key, op,
					"The request was in flight when the wait ended: it may have been accepted. It will not be resent; poll get_message_status.")), nil
			default:
				// Its deadline was capped at stop, which has passed:
				// the outbox will expire it without sending it.
				return t.fail(failure(CodeBackpressure, 0, true, estimate.Sub(now), r.deadline, cloudapi.StateNotSubmitted, key, op,
					fmt.Sprintf("Not sent: it could not go within the %s that delivery sync waits, and will be dropped unsent. Retry later with a new idempotency_key, or use delivery async.", t.syncWait))), nil
			}
		}
		wait := t.poll
		if d := stop.Sub(t.clk.Now()); d < wait {
			wait = d
		}
		if wait <= 0 {
			continue // the wait ended during the read: read once more
		}
		tm := t.clk.Timer(wait)
		select {
		case <-ctx.Done():
			tm.Stop()
			return outcome{}, ctx.Err()
		case <-woken:
			tm.Stop()
		case <-tm.C:
		}
	}
}

// unreadable describes a message stored in the outbox whose state could
// not be read: the outbox will send it (or has), so it is queued, never
// "not_submitted" (which says it is safe to send again).
func unreadable(err error, deadline time.Time, key, op string) toolError {
	te := fromError(err, deadline, key, op)
	te.res.SendState = stateQueued
	te.summary = "Stored in the outbox, which will send it, but its state cannot be read now. Do not send it again: check get_message_status later (the same idempotency_key never sends twice)."
	return te
}

// newKey returns a random idempotency key.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// queued is the result for a message waiting in the outbox.
func (t *tools) queued(now, at, deadline time.Time, key, op string) outcome {
	at = later(at, now)
	tail := "it will expire unsent if it cannot go before its deadline"
	if !deadline.IsZero() && at.After(deadline) {
		tail = "that is after its deadline, so it will probably expire unsent"
	}
	return outcome{
		summary: fmt.Sprintf("Queued, not sent yet: expected to go at %s (in about %s); %s. Check with get_message_status.",
			stamp(at), at.Sub(now).Round(time.Millisecond), tail),
		value: SendResult{Status: StatusQueued, OperationID: op, IdempotencyKey: key,
			EstimatedSendAt: stamp(at), RetryAfterMS: ms(at.Sub(now)), ExpiresAt: stamp(deadline)},
	}
}

func (t *tools) fail(te toolError) outcome {
	return outcome{summary: te.summary, value: te.res, isError: true}
}

// itemFailure describes a failed item.
func itemFailure(it item, deadline time.Time, key, op string) toolError {
	if it.code != 0 {
		return metaFailure(errcodes.Code(it.code), deadline, key, op)
	}
	return failure(CodeSendFailed, 0, false, 0, deadline, cloudapi.StateNotSubmitted, key, op,
		"Not sent: the message was dropped before sending ("+errcodes.Sanitize(it.reason)+").")
}

// status is get_message_status.
func (t *tools) status(ctx context.Context, a StatusArgs) (outcome, error) {
	if err := parseStatus(a); err != nil {
		return outcome{}, err
	}
	id := a.OperationID
	if id == "" {
		id = a.IdempotencyKey
	}
	it, err := t.q.get(ctx, id)
	if err == nil && a.OperationID != "" && a.IdempotencyKey != "" && it.key != a.IdempotencyKey {
		err = errNotFound
	}
	switch {
	case errors.Is(err, errNotFound):
		return outcome{isError: true,
			summary: "No message with this operation_id or idempotency_key.",
			value: StatusResult{Code: CodeUnknownOperation, Retryable: ptr(false),
				OperationID: a.OperationID, IdempotencyKey: a.IdempotencyKey},
		}, nil
	case err != nil:
		if ctx.Err() != nil {
			return outcome{}, ctx.Err()
		}
		return outcome{isError: true,
			summary: "The outbox is unavailable; try again.",
			value:   StatusResult{Code: CodeUnavailable, Retryable: ptr(true)},
		}, nil
	}
	res := StatusResult{
		Status:         it.state,
		OperationID:    it.operationID,
		IdempotencyKey: it.key,
		MessageID:      it.messageID,
		Attempts:       it.attempts,
		ExpiresAt:      stamp(it.expiresAt),
		Reason:         errcodes.Sanitize(it.reason),
		Transitions:    it.transitions,
	}
	summary := fmt.Sprintf("Status: %s.", it.state)
	switch it.state {
	case stateQueued:
		summary = "Queued: not sent yet."
	case stateSending:
		summary = "Sending: the request may be in flight."
	case stateAccepted:
		summary = "Accepted by WhatsApp, not yet reported delivered."
	case stateSubmittedUnknown:
		summary = "Outcome unknown: the request may have reached WhatsApp; it is never resent automatically and is reconciled from delivery reports."
		res.SendState = string(cloudapi.StateSubmittedUnknown)
	case stateFailed:
		te := itemFailure(it, time.Time{}, it.key, it.operationID)
		res.Code, res.MetaCode, res.Retryable, res.SendState = te.res.Code, te.res.MetaCode, te.res.Retryable, te.res.SendState
		summary = "Failed: " + te.summary
	case stateExpired:
		res.Code, res.Retryable, res.SendState = CodeMessageExpired, ptr(false), string(cloudapi.StateNotSubmitted)
		summary = "Expired: its deadline passed before it could be sent; it was never sent."
	}
	// A message's state is not an error of this call: the lookup worked.
	return outcome{summary: summary, value: res}, nil
}
