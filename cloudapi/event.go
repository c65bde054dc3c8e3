package cloudapi

import (
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput/usage"
)

// Event describes one attempt, for an observer (WithObserver) and the log.
type Event struct {
	// At is the instant of the attempt on the Client's clock.
	At time.Time
	// From is the business phone number ID.
	From string
	// To is the recipient, masked.
	To string
	// Pair is a pseudonym of the (number, recipient) pair, stable for one
	// Client, so that a log can be grouped by pair without naming the user.
	Pair string
	// Kind is the message's kind.
	Kind Kind
	// Attempt counts the requests for this message, from 1.
	Attempt int
	// Wait is how long the message waited for its slot before this attempt.
	Wait time.Duration
	// Held is the limit that held the message longest during Wait
	// (errcodes.HoldNone when it did not wait): HoldPair, HoldPhoneNumber
	// (its throughput or a hold), HoldApp or HoldWABA (the call budget), or
	// HoldTier.
	Held errcodes.Hold
	// Duration is how long the request took, from the attempt's start to
	// Meta's answer (or the transport's failure).
	Duration time.Duration
	// MessageID is the wamid when Meta accepted the message.
	MessageID string
	// State is the message's state after the attempt: StateRefused when a
	// limit refused it (it is retried if the Client paces that limit).
	State SendState
	// Code is Meta's error code when the attempt failed with one.
	Code errcodes.Code
	// Err is the attempt's error, nil on success.
	Err error
	// IdempotencyKey is the message's key.
	IdempotencyKey string
}

// emit logs an attempt and hands it to the observer. Nothing is built when
// neither the logger nor an observer wants it; the masked recipient and the
// pair's pseudonym are made once per send.
func (s *sending) emit(ev Event) {
	c := s.c
	level := slog.LevelInfo
	if ev.Err != nil {
		level = slog.LevelWarn
	}
	logs := c.log.Enabled(s.ctx, level)
	if c.hooks != nil {
		c.hooks.Attempt(s.ctx, ev) // without the recipient: hooks need no pair
	}
	if !logs && c.observer == nil {
		return
	}
	if !s.pair.IsZero() {
		if s.who == nil {
			s.who = &struct{ to, pair string }{s.to.Masked(), c.pseudonym(s.pair)}
		}
		ev.To, ev.Pair = s.who.to, s.who.pair
	}
	if logs {
		attrs := []slog.Attr{
			slog.Time("at", ev.At),
			slog.String("from", ev.From),
			slog.String("to", ev.To),
			slog.String("pair", ev.Pair),
			slog.String("kind", string(ev.Kind)),
			slog.Int("attempt", ev.Attempt),
			slog.Duration("wait", ev.Wait),
			slog.String("state", string(ev.State)),
			slog.String("key", ev.IdempotencyKey),
		}
		if ev.MessageID != "" {
			attrs = append(attrs, slog.String("wamid", ev.MessageID))
		}
		if ev.Err != nil {
			attrs = append(attrs, slog.Int("code", int(ev.Code)), slog.String("error", errcodes.Sanitize(ev.Err.Error())))
		}
		c.log.LogAttrs(s.ctx, level, "wapace attempt", attrs...)
	}
	if c.observer != nil {
		c.observer(ev)
	}
}

// observeUsage feeds Meta's usage header to the call budget.
func (c *Client) observeUsage(resp interface{ Get(string) string }) {
	if u, err := usage.Parse(resp.Get(usage.Header)); err == nil && len(u) > 0 {
		c.budget.Observe(c.clock.Now(), u)
	}
}

const redacted = "[redacted]"

// scrub makes sure a transport error never carries the token (net/http
// does not put headers in errors; this guards custom transports).
func (c *Client) scrub(err error) error {
	if err != nil && strings.Contains(err.Error(), c.token.token) {
		return errors.New("cloudapi: transport error (message withheld: it quoted the access token)")
	}
	return err
}

// scrubAny scrubs an error of any kind: Meta's fields in place, or a
// transport error's text.
func (c *Client) scrubAny(err error) error {
	var ge *errcodes.Error
	if errors.As(err, &ge) {
		c.scrubError(ge)
		return err
	}
	return c.scrub(err)
}

// scrubError removes the token from every text Meta sent back, however
// short the token: Meta's messages, titles and trace IDs have echoed it.
func (c *Client) scrubError(e *errcodes.Error) {
	tok := c.token.token
	for _, f := range []*string{&e.Type, &e.Message, &e.Title, &e.Details, &e.MessagingProduct, &e.UserTitle, &e.UserMessage, &e.FBTraceID, &e.Href} {
		if strings.Contains(*f, tok) {
			*f = strings.ReplaceAll(*f, tok, redacted)
		}
	}
}
