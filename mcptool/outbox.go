package mcptool

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
)

// outboxQueue adapts an *outbox.Outbox to queue. The operation ID of a
// message is its idempotency key: the outbox names items by key.
type outboxQueue struct{ o *outbox.Outbox }

func (q outboxQueue) enqueue(ctx context.Context, from string, m cloudapi.Message) (ticket, error) {
	tk, err := q.o.Enqueue(ctx, from, m)
	switch {
	case err == nil:
		return ticket{key: tk.Key, operationID: tk.Key, state: tk.State.String(), estimatedSendAt: tk.EstimatedAt}, nil
	case errors.Is(err, outbox.ErrQueueFull):
		var re *outbox.RejectError
		if errors.As(err, &re) && re.Full == "lane" {
			return ticket{}, fmt.Errorf("%w: %w", errLaneFull, err)
		}
		return ticket{}, fmt.Errorf("%w: %w", errQueueFull, err)
	case errors.Is(err, outbox.ErrOutsideWindow):
		return ticket{}, fmt.Errorf("%w: %w", errcodes.ReEngagement, err)
	case errors.Is(err, outbox.ErrExpired):
		return ticket{}, fmt.Errorf("%w: %w", errExpired, err)
	}
	return ticket{}, err
}

func (q outboxQueue) get(ctx context.Context, id string) (item, error) {
	it, err := q.o.Get(ctx, id)
	if errors.Is(err, outbox.ErrNotFound) {
		return item{}, fmt.Errorf("%w: %w", errNotFound, err)
	}
	if err != nil {
		return item{}, err
	}
	v := item{
		key: it.Key, operationID: it.Key, state: it.State.String(), messageID: it.MessageID,
		code: errcodes.Code(it.Code), reason: it.Reason, attempts: it.Attempts, expiresAt: it.ExpiresAt,
	}
	for _, tr := range it.History {
		v.transitions = append(v.transitions, Transition{State: tr.State.String(), At: stamp(tr.At), Reason: errcodes.Sanitize(tr.Reason)})
	}
	return v, nil
}
