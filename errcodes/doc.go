// Package errcodes classifies every WhatsApp Cloud API error code by what it
// means for a sender: what must wait, whether waiting can help, and whether a
// send that failed with it may have been accepted all the same.
//
// The HTTP status is no guide (Meta has returned both 400 and 429 for the
// same throttling code); the code is. Following Meta's advice, decide on
// Code and the details text, not on the status or the deprecated subcode.
//
// # Model
//
// Every code maps to a [Class] through [Lookup], which is total: a code
// wapace does not know gets a conservative class (not retryable, scope
// unknown, Known false). The class's [Scope] says what else must wait:
//
//	131056 pair rate limit       ScopePair         only this sender-recipient pair
//	130429 throughput            ScopePhoneNumber  this business number
//	131057 maintenance           ScopePhoneNumber  this number, about a minute
//	4      app rate limit        ScopeApp          this app's calls
//	80007  WABA rate limit       ScopeWABA         calls against this WABA
//	131049 per-user marketing    ScopeRecipient    this user, at least 24 h
//	131048 spam rate limit       ScopePhoneNumber  this number; quality, not pacing
//	131064 messaging limit       ScopeBusiness     the portfolio's tier, until lifted
//	100    invalid parameter     ScopeRequest      nothing; fix the request
//
// The class's [Hold] names the sender's limiter a refusal pauses (pair, phone
// number, app or WABA call budget, tier, recipient, or none), so that one
// table decides every action.
//
// Class.OutcomeUnknown marks the answers (1, 2, 131000, 131016) that do not
// prove Meta refused a message: Meta's remedy is "try again", but the message
// may exist, so resending may deliver it twice. Reconcile instead: the
// message's idempotency key travels as biz_opaque_callback_data and comes back
// on its status webhooks; resend only if no status arrives within the
// message's lifetime. [Class.NotSent] combines the code with the HTTP status:
// a 5xx proves nothing was sent only for codes with RefusedOn5xx (2494100).
//
// The app and WABA call budgets (codes 4, 613, 80007, 80008) are Meta's
// limits on API calls, which for WhatsApp concern the management endpoints;
// /messages is paced by throughput, pair and tier limits instead.
//
// # Errors
//
// [Code] implements error, so the constants are sentinels, and [*Error]
// unwraps to its Code:
//
//	if errors.Is(err, errcodes.PairRateLimit) { ... }
//
//	var e *errcodes.Error
//	if errors.As(err, &e) {
//		log.Println(e.Class().Scope, e.FBTraceID)
//	}
//
// [Parse] and [ParseWebhook] return a [*ParseError], matched by
// [ErrNotGraphError], for input that is not a Graph error object. Error
// strings never quote Meta's free text, which may contain a phone number.
//
// # Sources
//
// Titles, scopes and waits follow Meta's "WhatsApp error codes" page
// (developers.facebook.com/documentation/business-messaging/whatsapp/support/error-codes,
// updated June 2026); the Throttling flag follows its "Throttling errors"
// group. 613 comes from the Graph API's error-handling and rate-limiting
// pages, which list it with the throttling codes. The waits come from Meta's
// pages on per-user marketing limits (131049), throughput upgrades (131057:
// about a minute, polled after 10, 20 and 40 s) and the error codes page
// (133015: 5 minutes; 2494100: "a few minutes", read as 2); where Meta
// gives no figure for a limit a sender paces (130429, 4, 613, 80007,
// 80008), the wait is wapace's and doubles per consecutive refusal
// ([Class.HoldAfter]). The page's "Marketing Messages API for WhatsApp
// Error codes" table gives 131055 and 134100 to 134102 (134102 at HTTP
// 500, a refusal all the same) and 1752041 (a duplicate onboarding
// request); its management sections give the template creation and
// insights codes (2388019 to 2388299, 200005 to 200007), the migration
// codes (2388001 to 2388103), the On-Behalf-Of account codes (2593079,
// 2593085) and the coexistence synchronization codes (2593107, 2593108).
// The December 2026 re-read took the page's full text from a public mirror
// of it (the November 2025 edition; Meta's own stored copy showed only the
// page's opening), and every title and wait above matches it.
// Codes 131014 and 12455, seen in other clients' traffic but on none of
// Meta's pages, are classified conservatively (not retryable, scope
// unknown). Every row is pinned by a test that names its page.
//
// Class is the one table from code to action: the Client, the outbox and
// the MCP tools take scope, hold and wait from it, and the limiters take
// the hold it gives, never a code.
package errcodes
