package outbox

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/wapace/wapace/cloudapi/webhook"
	"github.com/wapace/wapace/pairlimit"
)

// statusRank orders the states a status webhook can move an item to, so
// that a late "delivered" never undoes a "read".
var statusRank = map[string]State{"sent": StateAccepted, "delivered": StateDelivered, "read": StateRead, "failed": StateFailed}

// Reconcile applies a webhook notification (from a webhook.Handler's
// callback, or webhook.Parse): each status moves the item it names, found by
// biz_opaque_callback_data (the idempotency key) or else by wamid, to
// accepted ("sent"), delivered, read or failed, never backwards; a status
// for a submitted_unknown item settles its outcome. Each inbound message
// opens (renews) the sender's customer service window. Statuses for
// unknown items are ignored. It is safe to call with redelivered
// notifications.
func (o *Outbox) Reconcile(ctx context.Context, n *webhook.Notification) error {
	if o.isClosed() {
		return ErrClosed
	}
	if n == nil {
		return nil
	}
	now := o.cfg.clock.Now()
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("outbox: reconcile: %w", err)
	}
	defer tx.Rollback()
	var evs []Event
	for _, e := range n.Entry {
		for _, ch := range e.Changes {
			v := ch.Value
			if v == nil {
				continue
			}
			for _, m := range v.Messages {
				sender := m.From
				if sender == "" {
					sender = m.FromUserID // a BSUID
				}
				to, err := pairlimit.NormalizeRecipient(sender)
				if err != nil || v.Metadata.PhoneNumberID == "" {
					continue
				}
				at := webhookTime(m.Timestamp, now)
				if _, err := o.exec(ctx, tx, sqlInbound, v.Metadata.PhoneNumberID, to, nanos(at)); err != nil {
					return fmt.Errorf("outbox: reconcile: %w", err)
				}
			}
			for _, s := range v.Statuses {
				e, err := o.applyStatus(ctx, tx, now, s)
				if err != nil {
					return fmt.Errorf("outbox: reconcile: %w", err)
				}
				evs = append(evs, e...)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("outbox: reconcile: %w", err)
	}
	o.notify(evs)
	return nil
}

// The statements of Reconcile.
var (
	sqlInbound = `INSERT INTO outbox_windows (sender, recipient, last_inbound) VALUES (?, ?, ?)
		ON CONFLICT (sender, recipient) DO UPDATE SET last_inbound = CASE WHEN outbox_windows.last_inbound > excluded.last_inbound
		THEN outbox_windows.last_inbound ELSE excluded.last_inbound END`
	sqlStatusByKey   = `SELECT ikey, state, wamid, resends FROM outbox_items WHERE ikey = ?`
	sqlStatusByWamid = `SELECT ikey, state, wamid, resends FROM outbox_items WHERE wamid = ?`
	sqlStatusSet     = `UPDATE outbox_items SET state = ?, state_at = ?, code = ?, reason = ?, wamid = ?, lease_until = 0
		WHERE ikey = ? AND state = ?`
)

func webhookTime(ts string, now time.Time) time.Time {
	if sec, err := strconv.ParseInt(ts, 10, 64); err == nil && sec > 0 && sec < 1<<40 {
		return time.Unix(sec, 0)
	}
	return now
}

func (o *Outbox) applyStatus(ctx context.Context, tx execer, now time.Time, s webhook.Status) ([]Event, error) {
	target, ok := statusRank[s.Status]
	if !ok {
		return nil, nil
	}
	var key, st, wamid string
	var resends int
	err := o.queryRow(ctx, tx, sqlStatusByKey, s.CallbackData).Scan(&key, &st, &wamid, &resends)
	if err != nil && baseKey(s.CallbackData) != s.CallbackData {
		// A resend's key.
		err = o.queryRow(ctx, tx, sqlStatusByKey, baseKey(s.CallbackData)).Scan(&key, &st, &wamid, &resends)
	}
	if err != nil && s.ID != "" {
		err = o.queryRow(ctx, tx, sqlStatusByWamid, s.ID).Scan(&key, &st, &wamid, &resends)
	}
	if err != nil {
		return nil, nil // not ours, or not found: nothing to reconcile
	}
	cur, _ := parseState(st)
	// A status for an earlier attempt of an item the ResendPolicy sent
	// again (its own key, or an earlier resend's key or wamid).
	earlier := resends > 0 && s.CallbackData != resendKey(key, resends) && (s.ID == "" || s.ID != wamid)
	switch {
	case earlier && target == StateFailed:
		return nil, nil // says nothing of the current attempt
	case earlier && cur == StateQueued:
		// An earlier attempt reached Meta after all: the resend waiting
		// in the queue must never go.
	case cur == StateQueued, cur == StateExpired:
		return nil, nil // never sent by us: a status cannot be about this item
	}
	switch cur {
	case StateFailed, StateRead:
		return nil, nil // final
	case StateDelivered:
		if target != StateRead && target != StateFailed {
			return nil, nil
		}
	case StateAccepted:
		if target == StateAccepted {
			return nil, nil
		}
	}
	code, reason := 0, ""
	if target == StateFailed {
		reason = "status webhook: failed"
		if len(s.Errors) > 0 {
			code = int(s.Errors[0].Code)
			reason += ": " + strconv.Itoa(code)
		}
	}
	if cur == StateSubmittedUnknown || cur == StateSending {
		if reason == "" {
			reason = "outcome settled by a status webhook"
		}
	}
	if cur == StateQueued {
		reason = "an earlier attempt's status webhook: " + s.Status + "; resend cancelled"
	}
	if wamid == "" {
		wamid = s.ID
	}
	if _, err := o.exec(ctx, tx, sqlStatusSet, target.String(), nanos(now), code, reason, wamid, key, st); err != nil {
		return nil, err
	}
	return events(now, target, reason, key), nil
}
