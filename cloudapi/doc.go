// Package cloudapi is a thin WhatsApp Cloud API client that sends messages
// within all of Meta's limits at once, retries exactly as Meta prescribes and
// only for the pair or number that failed, refuses to send stale content,
// never sends a message twice, and says precisely what state each message is
// in. Package cloudapi/cloudapitest is a fake Meta to test against.
//
// # Sending
//
//	c, err := cloudapi.New(token)
//	res, err := c.Send(ctx, phoneNumberID, cloudapi.Text("+237 690 00 00 01", "Your order shipped"))
//
// A recipient is a phone number or a business-scoped user ID
// ("CO.1949266959121697"), parsed once per message; a BSUID travels in the
// request's "recipient" member and is paced exactly like a number.
//
// One send reads top to bottom: validate every message and encode its
// request (a [*ValidationError], nothing spent); refuse a key already sent
// ([ErrDuplicate], no request); admit in named steps: known waits (a
// retry's hold, the call budget's hold, the pair's debt, asked without
// reserving), the business number's throughput now, the pair at the
// number's slot, the freshness deadline ([Message].ExpiresAt; 10 minutes
// for authentication templates) or the context's, and for
// business-initiated templates the messaging tier; a slot past the
// deadline gives everything back and fails at once with a
// [*BackpressureError]. Then wait on the clock, post with the token in the
// Authorization header only, and classify the answer with [CheckResponse]
// and errcodes' table. [Client.SendBurst] sends a multi-bubble reply as one
// burst of the pair. The known waits are [Client.Admission], a read-only
// query that an outbox or an agent's tools ask too.
//
// The limits decide when a message may leave; Meta counts it when it
// arrives. So the Client checks again at the write, on the request body's
// first read (the connection is ready, no byte of the body has left).
// Without a Store the Client counts the number's writes themselves: a
// message goes, however late, while the last second of writes (and 5 ms)
// holds fewer than the number's figure, keeping its slot, and waits for
// room otherwise; the number is paced at its full rate, with no margin for
// lateness. With a Store (other processes write for the number too) a
// message later than its number's tolerance gives its slot back and takes
// a new one, and each check and write is reported to the number's
// limiter, whose margin follows the lateness observed (see throughput's
// "Write-time pacing"). Either way default options hold Meta's figures on
// a loaded machine; a message met by a hold that began after it was
// admitted waits it out, and the first bubble of a burst moves the pair's
// reservation to its real start. A check that gives up (the deadline or
// the context ends its wait) proves the message was not submitted.
//
// A template goes to /marketing_messages when its latest category is
// marketing, to /messages otherwise (Meta's "Route template messages by
// category"): the category comes from [Message].Category or from the
// registry given to [WithTemplateCategories] ([TemplateRegistry], filled by
// [Client.ListTemplates] and kept current from template_category_update
// webhooks), read again when the request is written. Both endpoints share
// every limit; a template nobody can place fails with [ErrUnknownCategory]
// before anything is spent.
//
// # Retries
//
// Only answers that prove Meta refused the message for a limit the Client
// paces are retried, and only that limit waits: 131056 holds the pair
// (4^X seconds, backoff.Meta), 130429, 131057 and 2494100 hold the number,
// 4, 613, 80007 and 80008 hold the call budget (errcodes.Class.Hold says
// which; a usage header about management calls holds no send); every other
// recipient keeps flowing. A refusal for a limit none of the Client's
// limiters holds (131048, the tier's 131064) is reported in StateRefused
// and not retried. When bubble k of a burst is refused, the pair keeps
// only the debt of the k bubbles Meta accepted and the rest go again as a
// new burst. Meta has no idempotency key, so an answer that does not prove refusal (a transport failure after
// a byte of the request may have left, a timeout, any 5xx except 2494100,
// codes 1, 2, 131000, 131016) leaves the outcome unknown: the error matches
// [ErrSubmittedUnknown], carries the message's idempotency key (also sent
// as biz_opaque_callback_data, to reconcile with status webhooks), and the
// message is never resent. 131049 (the per-user marketing limit, summed
// across all businesses) is reported, not retried.
//
// # Errors
//
// [StateOf] maps any error from Send to one [SendState]: not submitted
// (safe to send again), refused for a limit (send again after the wait),
// failed for good, or submitted with an unknown outcome (never resend).
//
//	var bp *cloudapi.BackpressureError
//	var se *cloudapi.SendError
//	switch {
//	case errors.As(err, &bp):                        // refused before sending: retry after bp.RetryAfter()
//	case errors.Is(err, cloudapi.ErrDuplicate):       // this key was already sent: se describes the first send
//	case errors.Is(err, cloudapi.ErrSubmittedUnknown): // may have been sent: reconcile, never resend
//	case errors.Is(err, errcodes.MarketingLimit):     // Meta declined: try in a day, or another channel
//	case errors.As(err, &se):                         // se.State, se.Err (an *errcodes.Error)
//	}
//
// Meta's texts are scrubbed of the access token before they reach an error,
// and printing a Client (or a copy of it) never shows the token.
//
// # Logs
//
// [WithLogger] logs every attempt (nothing is built when the logger's
// level is disabled): the instant on the client's clock, the
// number, the recipient masked, a per-client pseudonym of the pair, the
// wamid, Meta's code, the attempt and the wait: the per-message timestamped
// log that lets a user reconstruct the burst behind a 131056 (see
// pairlimit.Replay). The access token never appears in an error or a log.
//
// # Webhooks
//
// Package cloudapi/webhook receives what Meta posts back: a webhook.Handler
// verifies signatures, decodes leniently and hands inbound messages,
// statuses and every other field to typed callbacks. A status carries the
// message's idempotency key as its biz_opaque_callback_data. [VerifySignature]
// and [MaxWebhookBody] forward to that package.
//
// # Testing
//
// Run a Client against cloudapitest.NewServer with the server's in-memory
// client (WithHTTPClient(srv.Client()), WithBaseURL(cloudapitest.BaseURL))
// inside a testing/synctest bubble: the whole pipeline, limits and retries
// included, runs on simulated time.
package cloudapi
