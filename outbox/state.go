package outbox

import (
	"time"

	"github.com/wapace/wapace/cloudapi"
)

// State is where an item stands. The zero State is StateQueued.
type State int

// The states of an item. Queued and sending are live; the others are
// final, except that accepted becomes delivered, read or failed from status
// webhooks, and submitted_unknown may be reconciled from them (or, only if
// a ResendPolicy allows it, queued again).
const (
	// StateQueued: stored, waiting for its lane and its instant.
	StateQueued State = iota
	// StateSending: claimed by a worker whose lease is live; the request
	// may be in flight.
	StateSending
	// StateAccepted: Meta accepted the request (not yet delivered).
	StateAccepted
	// StateSubmittedUnknown: the request may have reached Meta but no
	// answer proves it (a transport failure, a timeout, a worker that died
	// mid-request). Never resent automatically.
	StateSubmittedUnknown
	// StateDelivered: a status webhook reported delivery.
	StateDelivered
	// StateRead: a status webhook reported that the user read it.
	StateRead
	// StateFailed: Meta refused it for good, a status webhook reported a
	// failure, or revalidation dropped it. A dead letter.
	StateFailed
	// StateExpired: its freshness deadline passed before it could be sent;
	// it was never sent. A dead letter.
	StateExpired
)

var stateNames = [...]string{"queued", "sending", "accepted", "submitted_unknown", "delivered", "read", "failed", "expired"}

// String returns the state's name: queued, sending, accepted,
// submitted_unknown, delivered, read, failed or expired.
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "unknown"
	}
	return stateNames[s]
}

// Final reports whether the outbox will send nothing more for an item in
// state s on its own. Webhooks may still move an accepted item to delivered
// or read, and a submitted_unknown item is sent again only if a
// [ResendPolicy] (see [WithResend]) allows it, as a new, recorded attempt.
func (s State) Final() bool { return s != StateQueued && s != StateSending }

// DeadLetter reports whether s is a dead-letter state: failed or expired.
func (s State) DeadLetter() bool { return s == StateFailed || s == StateExpired }

// parseState is the inverse of String.
func parseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// Ticket is Enqueue's receipt.
type Ticket struct {
	// Key is the item's idempotency key (also its biz_opaque_callback_data).
	Key string
	// State is the item's state: StateQueued for a new item, the existing
	// item's state when the key was already enqueued.
	State State
	// Existing reports whether the key was already enqueued, in which case
	// nothing new was stored.
	Existing bool
	// EnqueuedAt is when the item was stored.
	EnqueuedAt time.Time
	// EstimatedAt is the estimated send instant: when the lane and the
	// number should let it go, from the queue's depth at enqueue (zero
	// when the key already existed).
	EstimatedAt time.Time
	// ExpiresAt is the item's freshness deadline (zero for none).
	ExpiresAt time.Time
}

// Transition is one recorded change of state.
type Transition struct {
	// At is the instant on the Outbox's clock.
	At time.Time
	// State is the state entered.
	State State
	// Reason says why, for dead letters, unknown outcomes and resends.
	Reason string
}

// Item is an enqueued message and its record.
type Item struct {
	// Key is the idempotency key.
	Key string
	// From is the business phone number ID.
	From string
	// To is the recipient's digits ("" for a read receipt).
	To string
	// Kind is the message's kind ("text", "template", ...).
	Kind string
	// State is the current state.
	State State
	// Attempts counts the dispatches that may have reached Meta.
	Attempts int
	// Resends counts the times a ResendPolicy queued it again after an
	// unknown outcome.
	Resends int
	// EnqueuedAt is when it was stored.
	EnqueuedAt time.Time
	// ExpiresAt is the freshness deadline (zero for none).
	ExpiresAt time.Time
	// UpdatedAt is when it entered its current state.
	UpdatedAt time.Time
	// MessageID is the wamid once known.
	MessageID string
	// Code is Meta's error code for a failure (0 otherwise).
	Code int
	// Reason says why the item is in its state, for dead letters and
	// unknown outcomes.
	Reason string
	// History lists every transition, oldest first (Get fills it).
	History []Transition
}

// ReasonHeld is the Reason of an accepted item that Meta holds for
// business portfolio pacing (the send answered message_status
// held_for_quality_assessment): a sub-state of StateAccepted. The item
// stays accepted, since the request succeeded and must never be resent;
// its outcome comes by status webhook through Reconcile: delivered or read
// once Meta releases it, failed with code 132015 (TemplatePaused) if Meta
// drops it.
const ReasonHeld = "held_for_quality_assessment"

// Held reports whether the item is accepted and held by Meta for business
// portfolio pacing (see ReasonHeld).
func (it Item) Held() bool { return it.State == StateAccepted && it.Reason == ReasonHeld }

// acceptedReason is the Reason an accepted send records.
func acceptedReason(res *cloudapi.Result) string {
	if res.Held() {
		return ReasonHeld
	}
	return ""
}
