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
// One send, in order: validate the message and normalise the recipient
// (a [*ValidationError], nothing spent); reserve the business number's
// throughput, the pair's slot and, for business-initiated templates, the
// messaging tier, at instants that agree; if that instant is past the
// message's freshness deadline ([Message].ExpiresAt; 10 minutes for
// authentication templates) or the context's deadline, give everything back
// and fail at once with a [*BackpressureError]; otherwise wait on the clock,
// post with the token in the Authorization header only, and classify the
// answer with errcodes. [Client.SendBurst] sends a multi-bubble reply as one
// burst of the pair.
//
// # Retries
//
// Only answers that prove Meta refused the message for a limit are retried,
// and only the failing scope waits: 131056 holds the pair (4^X seconds,
// backoff.Meta), 130429 and 131057 hold the number, 4 and 80007 hold the
// app's budget; every other recipient keeps flowing. Meta has no idempotency
// key, so an answer that does not prove refusal (a transport failure after
// the request may have been written, a timeout, a 5xx, codes 1, 2, 131000,
// 131016) leaves the outcome unknown: the error matches [ErrSubmittedUnknown],
// carries the message's idempotency key (also sent as
// biz_opaque_callback_data, to reconcile with status webhooks), and the
// message is never resent. 131049 (the per-user marketing limit, summed
// across all businesses) is reported, not retried: pacing cannot help, and
// retrying within 24 h extends it.
//
// # Errors
//
//	var bp *cloudapi.BackpressureError
//	var se *cloudapi.SendError
//	switch {
//	case errors.As(err, &bp):                      // not sent: bp.Limit was full for bp.RetryAfter
//	case errors.Is(err, cloudapi.ErrSubmittedUnknown): // may have been sent: reconcile, never resend
//	case errors.Is(err, errcodes.MarketingLimit):    // Meta declined: try in a day, or another channel
//	case errors.As(err, &se):                        // se.State, se.Err (an *errcodes.Error)
//	}
//
// [StateOf] maps any error from Send to a [SendState].
//
// # Logs
//
// [WithLogger] logs every attempt: the instant on the client's clock, the
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
