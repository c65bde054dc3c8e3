package mcptool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
)

// queue is what the tools need from the outbox; outboxQueue adapts
// *outbox.Outbox to it, and the decision logic is tested against it.
type queue interface {
	// enqueue stores m durably, or rejects it storing nothing; a key that
	// exists returns the existing item's ticket.
	enqueue(ctx context.Context, from string, m cloudapi.Message) (ticket, error)
	// get returns the item with this operation ID or idempotency key, or
	// an error matching errNotFound.
	get(ctx context.Context, id string) (item, error)
}

// ticket is what enqueueing returned.
type ticket struct {
	key, operationID string
	state            string
	estimatedSendAt  time.Time
}

// item is a message as the outbox records it.
type item struct {
	key, operationID string
	state            string
	messageID        string
	code             errcodes.Code // Meta's code for a failed item
	reason           string
	attempts         int
	expiresAt        time.Time
	transitions      []Transition
}

// The outbox states (item.state).
const (
	stateQueued           = "queued"
	stateSending          = "sending"
	stateAccepted         = "accepted"
	stateSubmittedUnknown = "submitted_unknown"
	stateDelivered        = "delivered"
	stateRead             = "read"
	stateFailed           = "failed"
	stateExpired          = "expired"
)

// Errors the adapter maps the outbox's errors to.
var (
	errNotFound  = errors.New("mcptool: no such message")
	errQueueFull = errors.New("mcptool: queue full")
	errLaneFull  = fmt.Errorf("%w: the recipient's lane", errQueueFull)
	errExpired   = errors.New("mcptool: message expired")
)
