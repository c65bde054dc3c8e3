package cloudapi

import (
	"github.com/wapace/wapace/errcodes"
)

// This file is the one place that turns Meta's answer into an action for a
// send, and it reads everything from errcodes.Class: whether the answer
// proves nothing was sent (Class.NotSent), which limit a refusal holds
// (Class.Hold), and whether waiting helps (Class.Retryable).

// retried reports whether a refusal of class cl may be retried by the
// Client: it holds a limit the Client paces itself (the pair, the number,
// the call budget) and waiting helps. The Client retries it only when that
// limiter applied a hold.
func retried(cl errcodes.Class) bool {
	switch cl.Hold {
	case errcodes.HoldPair, errcodes.HoldPhoneNumber, errcodes.HoldApp, errcodes.HoldWABA:
		return cl.Retryable
	}
	return false
}

// decide maps one Graph error answer to the message's state: StateRefused
// (refused for a limit; retried when the Client paces that limit),
// StateFailed, or StateSubmittedUnknown when the answer does not prove that
// nothing was sent (any 5xx but 2494100, codes 1, 2, 131000, 131016).
func decide(e *errcodes.Error) SendState {
	cl := e.Class()
	switch {
	case !cl.NotSent(e.HTTPStatus):
		return StateSubmittedUnknown
	case retried(cl) || cl.Hold == errcodes.HoldTier:
		return StateRefused
	default:
		return StateFailed
	}
}

// standsFor returns the Meta code a local limit stands for in a
// *BackpressureError, given the last refusal's code (or 0): that code when
// it holds the same limit, else the code errcodes names for the limit.
func standsFor(h errcodes.Hold, last errcodes.Code) errcodes.Code {
	if last != 0 && errcodes.Lookup(last).Hold == h {
		return last
	}
	return h.Code()
}

// misrouted reports whether refusal e, answered at /marketing_messages,
// says the template is not a marketing one, so that its place is
// /messages: 134100 ("Only marketing messages supported": a utility or
// authentication template) and 131055 ("Only marketing template messages
// are supported"), when the answer proves nothing was sent. Meta's remedy
// is to route by the latest category, and Cloud API's /messages takes
// every category; the Client sends such a message again there, once, as a
// new request. Other refusals there (134101 still syncing, 134102
// template unavailable, the STRICT product policy's refusal) are not
// re-routed: they say nothing about the category, and a business that
// wants Meta to deliver through Cloud API instead keeps product_policy at
// CLOUD_API_FALLBACK, Meta's default.
func misrouted(e *errcodes.Error) bool {
	if e == nil || !e.Class().NotSent(e.HTTPStatus) {
		return false
	}
	switch e.Code {
	case errcodes.MarketingAPITemplateCategory, errcodes.MarketingAPINotAllowed:
		return true
	}
	return false
}
