package errcodes

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// Scope says what else must wait after an error: the scope of the limit or
// condition behind it. A pair-scoped error must never slow other recipients.
type Scope int

const (
	// ScopeUnknown: the error does not say what is affected. Treat it
	// conservatively.
	ScopeUnknown Scope = iota
	// ScopeRequest: the request itself is wrong; fix it, do not resend it as
	// is. Nothing else must wait.
	ScopeRequest
	// ScopePair: only this business number and recipient pair must wait
	// (131056).
	ScopePair
	// ScopeRecipient: this WhatsApp user cannot be reached for now, from any
	// of the business's numbers (131049, 131050, 131026, 131047, 130403,
	// 130497 for recipients in certain countries).
	ScopeRecipient
	// ScopePhoneNumber: this business phone number must wait (130429,
	// 131048, 131057, 2494100, registration errors).
	ScopePhoneNumber
	// ScopeApp: every call this app makes must slow down (4, 613).
	ScopeApp
	// ScopeWABA: every call against this WhatsApp Business Account must slow
	// down (80007, 80008), or the condition holds for the whole account
	// (131063).
	ScopeWABA
	// ScopeBusiness: the whole account or business portfolio is affected
	// (368, 131031, 131042, 131064, 134011).
	ScopeBusiness
	// ScopeAuth: the access token or its permissions are wrong; nothing will
	// succeed until a person fixes them (0, 3, 10, 190, 200 to 299).
	ScopeAuth
	// ScopeTemplate: the template or flow named in the request cannot be used
	// for now; messages that do not use it are unaffected (132015, 132016,
	// 132068, 132069).
	ScopeTemplate
)

var scopeNames = [...]string{
	ScopeUnknown:     "unknown",
	ScopeRequest:     "request",
	ScopePair:        "pair",
	ScopeRecipient:   "recipient",
	ScopePhoneNumber: "phone_number",
	ScopeApp:         "app",
	ScopeWABA:        "waba",
	ScopeBusiness:    "business",
	ScopeAuth:        "auth",
	ScopeTemplate:    "template",
}

// String returns the scope's name in snake case, such as "phone_number".
func (s Scope) String() string {
	if s >= 0 && int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return "scope(" + strconv.Itoa(int(s)) + ")"
}

// Hold names the sending limit that a refusal with a code holds: what a
// sender must stop admitting until the condition clears. It is narrower than
// [Scope]: Scope says what is affected; Hold says which of the sender's
// limiters must pause. Codes that hold nothing that waiting lifts (a wrong
// request, a token problem, a user who opted out) have HoldNone.
type Hold int

const (
	// HoldNone: the refusal holds no limiter. Either nothing must wait, or
	// waiting cannot help.
	HoldNone Hold = iota
	// HoldPair: only this business number and recipient pair waits (131056).
	HoldPair
	// HoldPhoneNumber: this business phone number waits, for every recipient
	// (130429 throughput, 131048 spam rate limit, 131057 and 2494100
	// maintenance).
	HoldPhoneNumber
	// HoldApp: the app's call budget waits (4, 613).
	HoldApp
	// HoldWABA: the WhatsApp Business Account's call budget waits (80007,
	// 80008).
	HoldWABA
	// HoldTier: the portfolio's messaging limit (the tier of unique
	// recipients per 24 h) waits (131064, the messaging limit imposed after
	// template-classification violations).
	HoldTier
	// HoldRecipient: this WhatsApp user waits, from every business number
	// (131049, at least 24 h).
	HoldRecipient
)

var holdNames = [...]string{
	HoldNone:        "none",
	HoldPair:        "pair",
	HoldPhoneNumber: "phone_number",
	HoldApp:         "app",
	HoldWABA:        "waba",
	HoldTier:        "tier",
	HoldRecipient:   "recipient",
}

// String returns the hold's name in snake case, such as "phone_number".
func (h Hold) String() string {
	if h >= 0 && int(h) < len(holdNames) {
		return holdNames[h]
	}
	return "hold(" + strconv.Itoa(int(h)) + ")"
}

// Class is what wapace knows about one error code: Meta's title and group,
// what the error affects, which limit it holds, whether waiting can help, and
// whether an answer carrying it proves that nothing was sent.
//
// Class is the single table from code to action: a sender decides whether to
// retry (Retryable), what to pause (Hold) and for how long at least (Wait),
// and whether the message may exist (OutcomeUnknown, [Class.NotSent]) from it
// alone.
type Class struct {
	// Code is the classified code.
	Code Code
	// Title is Meta's title for the code (informational: decide on Code).
	Title string
	// Known reports whether the code is in wapace's table. Unknown codes get
	// a conservative class: not retryable, scope unknown, nothing held.
	Known bool
	// Throttling reports whether Meta files the code under "Throttling
	// errors" (4, 80007, 130429, 131048, 131056, 131064, 133016), or, for 613,
	// under the Graph API's throttling codes.
	Throttling bool
	// Scope says what else must wait.
	Scope Scope
	// Hold says which sending limit a refusal with this code holds.
	Hold Hold
	// Retryable reports whether sending the same request again later can
	// succeed. It says nothing about how soon: see Wait and Hold.
	Retryable bool
	// OutcomeUnknown reports whether, for a send, the error does not prove
	// that Meta refused the message: it may have been accepted all the same
	// (1, 2, 131000, 131016: Meta's remedy is "try again", but the message
	// may exist). Such a send must be reconciled through status webhooks
	// (the message's biz_opaque_callback_data comes back on its statuses),
	// never resent blindly.
	OutcomeUnknown bool
	// RefusedOn5xx reports whether an answer with this code proves that
	// nothing was sent even when it comes with a 5xx HTTP status, which
	// otherwise means the server may have acted. Only 2494100 (maintenance
	// mode, which Meta documents with HTTP 503) has it. See [Class.NotSent].
	RefusedOn5xx bool
	// Wait is how long a refusal with this code holds what it holds: the
	// minimum wait Meta's documentation implies before the condition can
	// clear, or, for the limits a sender paces, the first hold a refusal
	// imposes. Zero means no wait lifts the condition, or Meta gives no
	// figure and no limiter holds the code (131056's hold is the pair
	// rule's, see pairlimit). It is the one wait per code that every wapace
	// limiter applies:
	//
	//	130429          1 s, doubling per consecutive refusal event up to 30 s
	//	131057          10 s, doubling up to 1 min (Meta: the upgrade's
	//	                maintenance lasts about a minute; polled within it)
	//	2494100         2 min (Meta: "try again in a few minutes")
	//	4, 613, 80007,  1 min, doubling up to 1 h
	//	80008
	//	131049          24 h (retrying sooner extends the block)
	//	133015          5 min
	//	134101          10 min (the template's ad sync)
	Wait time.Duration
	// MaxWait is the longest hold consecutive refusals reach when each
	// doubles the one before (see [Class.HoldAfter]); zero when every
	// refusal holds for Wait.
	MaxWait time.Duration
}

// HoldAfter returns the hold of a refusal with this class that follows n
// consecutive refusals (n = 0 for the first one since the last success):
// Wait doubled n times, capped at MaxWait, or Wait itself when MaxWait is
// zero. It returns zero for a class without a wait.
func (c Class) HoldAfter(n int) time.Duration {
	if c.Wait <= 0 {
		return 0
	}
	if c.MaxWait <= c.Wait {
		return c.Wait
	}
	d := c.Wait
	for i := 0; i < n && d < c.MaxWait; i++ {
		d *= 2
	}
	return min(d, c.MaxWait)
}

// Code returns the code Meta answers when the limit h holds is exceeded,
// which a sender's own hold of that limit stands for: 131056 for the
// pair, 130429 for the phone number, 4 for the app's call budget, 80007
// for the WABA's, 131064 for the tier, 131049 for the recipient, and 0
// for HoldNone.
func (h Hold) Code() Code {
	switch h {
	case HoldPair:
		return PairRateLimit
	case HoldPhoneNumber:
		return ThroughputLimit
	case HoldApp:
		return AppRateLimit
	case HoldWABA:
		return WABARateLimit
	case HoldTier:
		return BusinessRateLimit
	case HoldRecipient:
		return MarketingLimit
	}
	return 0
}

// NotSent reports whether an answer carrying this class's code with the
// given HTTP status proves that Meta did not accept the message, so that
// sending it again cannot deliver it twice.
//
// A 5xx status means the server may have acted: only codes with RefusedOn5xx
// prove a refusal there. Below 500, every code proves a refusal except the
// OutcomeUnknown ones; a code outside the table counts as a refusal below 500,
// since Meta answered with an error object before accepting anything.
func (c Class) NotSent(status int) bool {
	if status >= 500 {
		return c.RefusedOn5xx
	}
	return !c.OutcomeUnknown
}

// Lookup returns the class of c. It is total: codes outside the table get
// Known == false, Scope == ScopeUnknown, Hold == HoldNone and Retryable ==
// false. Every code of the permission range 200 to 299 is classified like
// APIPermission.
func Lookup(c Code) Class {
	if cl, ok := table[c]; ok {
		return cl
	}
	if c > APIPermission && c <= APIPermissionLast {
		cl := table[APIPermission]
		cl.Code = c
		return cl
	}
	return Class{Code: c, Scope: ScopeUnknown}
}

// Codes returns every code in the table in ascending order, with the
// permission range represented by APIPermission alone.
func Codes() []Code {
	out := make([]Code, 0, len(table))
	for _, e := range entries {
		out = append(out, e.Code)
	}
	return out
}

// entry flags, to keep the table readable.
const (
	throttling = 1 << iota
	retryable
	unknownOutcome
	refusedOn5xx
)

func row(c Code, title string, s Scope, h Hold, flags int, wait time.Duration) Class {
	return backoffRow(c, title, s, h, flags, wait, 0)
}

// backoffRow is row for a code whose consecutive refusals double the
// hold, from wait up to maxWait.
func backoffRow(c Code, title string, s Scope, h Hold, flags int, wait, maxWait time.Duration) Class {
	return Class{
		Code:           c,
		Title:          title,
		Known:          true,
		Throttling:     flags&throttling != 0,
		Scope:          s,
		Hold:           h,
		Retryable:      flags&retryable != 0,
		OutcomeUnknown: flags&unknownOutcome != 0,
		RefusedOn5xx:   flags&refusedOn5xx != 0,
		Wait:           wait,
		MaxWait:        maxWait,
	}
}

// entries is the classification table. Titles
// follow Meta's WhatsApp error codes page (developers.facebook.com,
// documentation/business-messaging/whatsapp/support/error-codes, updated
// June 2026) and, for 613, the Graph API's error-handling and rate-limiting
// pages; scope, hold and retryability are wapace's reading of Meta's
// descriptions and remedies.
var entries = []Class{
	row(AuthException, "AuthException", ScopeAuth, HoldNone, 0, 0),
	row(APIUnknown, "API Unknown", ScopeUnknown, HoldNone, retryable|unknownOutcome, 0),
	row(APIService, "API Service", ScopeUnknown, HoldNone, retryable|unknownOutcome, 0),
	row(APIMethod, "API Method", ScopeAuth, HoldNone, 0, 0),
	backoffRow(AppRateLimit, "API Too Many Calls", ScopeApp, HoldApp, throttling|retryable, time.Minute, time.Hour),
	row(PermissionDenied, "Permission Denied", ScopeAuth, HoldNone, 0, 0),
	row(BusinessNumberDeleted, "Parameter value is not valid", ScopeRequest, HoldNone, 0, 0),
	row(InvalidParameter, "Invalid parameter", ScopeRequest, HoldNone, 0, 0),
	row(AccessTokenExpired, "Access token has expired", ScopeAuth, HoldNone, 0, 0),
	row(APIPermission, "API Permission", ScopeAuth, HoldNone, 0, 0),
	row(PolicyBlocked, "Temporarily blocked for policies violations", ScopeBusiness, HoldNone, 0, 0),
	backoffRow(GraphRateLimit, "Calls to this api have exceeded the rate limit", ScopeApp, HoldApp, throttling|retryable, time.Minute, time.Hour),
	row(12455, "Unlisted code 12455 (not on Meta's error codes page)", ScopeUnknown, HoldNone, 0, 0),
	backoffRow(WABARateLimit, "Rate limit issues", ScopeWABA, HoldWABA, throttling|retryable, time.Minute, time.Hour),
	backoffRow(WABAManagementRateLimit, "Too many calls to this WhatsApp Business Account", ScopeWABA, HoldWABA, retryable, time.Minute, time.Hour),
	row(BlockedByBusiness, "The business blocked this user", ScopeRecipient, HoldNone, 0, 0),
	backoffRow(ThroughputLimit, "Rate limit hit", ScopePhoneNumber, HoldPhoneNumber, throttling|retryable, time.Second, 30*time.Second),
	row(Experiment, "User's number is part of an experiment", ScopeRecipient, HoldNone, 0, 0),
	row(CountryRestricted, "Business account is restricted from messaging users in this country", ScopeRecipient, HoldNone, 0, 0),
	row(SomethingWentWrong, "Something went wrong", ScopeUnknown, HoldNone, retryable|unknownOutcome, 0),
	row(AccessDenied, "Access denied", ScopeAuth, HoldNone, 0, 0),
	row(MissingParameter, "Required parameter is missing", ScopeRequest, HoldNone, 0, 0),
	row(InvalidParameterValue, "Parameter value is not valid", ScopeRequest, HoldNone, 0, 0),
	row(131014, "Unlisted code 131014 (not on Meta's error codes page)", ScopeUnknown, HoldNone, 0, 0),
	row(ServiceUnavailable, "Service unavailable", ScopeUnknown, HoldNone, retryable|unknownOutcome, 0),
	row(RecipientIsSender, "Recipient cannot be sender", ScopeRequest, HoldNone, 0, 0),
	row(Undeliverable, "Message Undeliverable", ScopeRecipient, HoldNone, 0, 0),
	row(RecipientNotAllowed, "Recipient phone number not in allowed list", ScopeRecipient, HoldNone, 0, 0),
	row(AccountLocked, "Account has been locked", ScopeBusiness, HoldNone, 0, 0),
	row(DisplayNameApproval, "WhatsApp provided number needs display name approval before message can be sent", ScopePhoneNumber, HoldNone, 0, 0),
	row(PaymentIssue, "Business eligibility payment issue", ScopeBusiness, HoldNone, 0, 0),
	row(IncorrectCertificate, "Incorrect certificate", ScopePhoneNumber, HoldNone, 0, 0),
	row(ReEngagement, "Re-engagement message", ScopeRecipient, HoldNone, 0, 0),
	row(SpamRateLimit, "Spam rate limit hit", ScopePhoneNumber, HoldPhoneNumber, throttling|retryable, 0),
	row(MarketingLimit, "Meta chose not to deliver", ScopeRecipient, HoldRecipient, retryable, 24*time.Hour),
	row(MarketingStopped, "User stopped marketing messages", ScopeRecipient, HoldNone, 0, 0),
	row(UnsupportedMessageType, "Unsupported message type", ScopeRequest, HoldNone, 0, 0),
	row(MediaDownload, "Media download error", ScopeRequest, HoldNone, 0, 0),
	row(MediaUpload, "Media upload error", ScopeRequest, HoldNone, 0, 0),
	row(PairRateLimit, "(Business Account, Consumer Account) pair rate limit hit", ScopePair, HoldPair, throttling|retryable, 0),
	backoffRow(Maintenance, "Account in maintenance mode", ScopePhoneNumber, HoldPhoneNumber, retryable, 10*time.Second, time.Minute),
	row(BSUIDNotSupported, "Business-scoped user ID recipients are not supported for this message", ScopeRequest, HoldNone, 0, 0),
	row(MarketingTemplatesDisabled, "Marketing templates disabled for Cloud API", ScopeWABA, HoldNone, 0, 0),
	row(MarketingAPINotAllowed, "Method not allowed", ScopeRequest, HoldNone, 0, 0),
	row(BusinessRateLimit, "Messaging limit after template classification violations", ScopeBusiness, HoldTier, throttling|retryable, 0),
	row(TemplateParamCount, "Template Param Count Mismatch", ScopeRequest, HoldNone, 0, 0),
	row(TemplateNotFound, "Template does not exist", ScopeRequest, HoldNone, 0, 0),
	row(TemplateTooLong, "Template Hydrated Text Too Long", ScopeRequest, HoldNone, 0, 0),
	row(TemplateFormatPolicy, "Template Format Character Policy Violated", ScopeRequest, HoldNone, 0, 0),
	row(TemplateParamFormat, "Template Parameter Format Mismatch", ScopeRequest, HoldNone, 0, 0),
	row(TemplatePaused, "Template is Paused", ScopeTemplate, HoldNone, 0, 0),
	row(TemplateDisabled, "Template is Disabled", ScopeTemplate, HoldNone, 0, 0),
	row(TemplateValidation, "Template validation error", ScopeRequest, HoldNone, 0, 0),
	row(FlowBlocked, "Flow is blocked", ScopeTemplate, HoldNone, 0, 0),
	row(FlowThrottled, "Flow is throttled", ScopeTemplate, HoldNone, retryable, 0),
	row(IncompleteDeregistration, "Incomplete Deregistration", ScopePhoneNumber, HoldNone, 0, 0),
	row(RegistrationServerUnavailable, "Server Temporarily Unavailable", ScopePhoneNumber, HoldNone, retryable, 0),
	row(PINMismatch, "Two step verification PIN Mismatch", ScopePhoneNumber, HoldNone, 0, 0),
	row(ReverificationNeeded, "Phone number Re-verification Needed", ScopePhoneNumber, HoldNone, 0, 0),
	row(TooManyPINGuesses, "Too Many two step verification PIN Guesses", ScopePhoneNumber, HoldNone, retryable, 0),
	row(PINGuessedTooFast, "Two step verification PIN Guessed Too Fast", ScopePhoneNumber, HoldNone, retryable, 0),
	row(NotRegistered, "Phone number Not Registered", ScopePhoneNumber, HoldNone, 0, 0),
	row(RegisterWait, "Please wait a few minutes before attempting to register this phone number", ScopePhoneNumber, HoldNone, retryable, 5*time.Minute),
	row(RegisterRateLimit, "Account register deregister rate limit exceeded", ScopePhoneNumber, HoldNone, throttling|retryable, 0),
	row(PaymentsTermsPending, "WhatsApp Payments terms of service acceptance pending", ScopeBusiness, HoldNone, 0, 0),
	row(MarketingAPITemplateCategory, "Only marketing messages supported", ScopeRequest, HoldNone, 0, 0),
	row(MarketingAPITemplateSync, "Your template is still syncing", ScopeTemplate, HoldNone, retryable, 10*time.Minute),
	row(MarketingAPINotEligible, "Template unavailable for use", ScopeWABA, HoldNone, refusedOn5xx, 0),
	row(GenericUserError, "Generic user error", ScopeRequest, HoldNone, 0, 0),
	row(PhoneNumberExists, "Phone number already exists in your account", ScopeRequest, HoldNone, 0, 0),
	row(MigrationCodeNotEligible, "Phone number not eligible for a registration code (migration only)", ScopeRequest, HoldNone, 0, 0),
	row(MigrationVerifyNotEligible, "Phone number not eligible for code verification (migration only)", ScopeRequest, HoldNone, 0, 0),
	row(MaintenanceMode, "Maintenance mode: try again in a few minutes", ScopePhoneNumber, HoldPhoneNumber, retryable|refusedOn5xx, 2*time.Minute),
	row(TemplateInsightsUnavailable, "Template insights unavailable", ScopeWABA, HoldNone, 0, 0),
	row(TemplateInsightsPermanent, "Cannot disable template insights", ScopeRequest, HoldNone, 0, 0),
	row(TemplateInsightsNotEnabled, "Template Insights not enabled", ScopeWABA, HoldNone, 0, 0),
	row(MarketingAPIDuplicateRequest, "Duplicate Request", ScopeBusiness, HoldNone, 0, 0),
	row(MigrationOwnership, "Please confirm ownership of this phone number", ScopePhoneNumber, HoldNone, 0, 0),
	row(TemplateLimitExceeded, "Message Template Limit Exceeded", ScopeWABA, HoldNone, 0, 0),
	row(TemplateCharacterLimit, "Character limit exceeded", ScopeRequest, HoldNone, 0, 0),
	row(TemplateHeaderFormat, "Message header format is incorrect", ScopeRequest, HoldNone, 0, 0),
	row(TemplateBodyFormat, "Message body format is incorrect", ScopeRequest, HoldNone, 0, 0),
	row(TemplateFooterFormat, "Message footer format is incorrect", ScopeRequest, HoldNone, 0, 0),
	row(MigrationNotPossible, "Cannot migrate phone number", ScopePhoneNumber, HoldNone, 0, 0),
	row(TemplateParamRatio, "Parameters words ratio exceeds limit", ScopeRequest, HoldNone, 0, 0),
	row(TemplateParamPosition, "Leading or trailing parameters not allowed", ScopeRequest, HoldNone, 0, 0),
	row(WABAMigrationMarked, "WhatsApp Business Account already marked for migration to a different solution ID", ScopeWABA, HoldNone, 0, 0),
	row(WABAInvalidForOBOMobility, "Invalid WhatsApp Business Account for OBO Mobility", ScopeWABA, HoldNone, 0, 0),
	row(SyncLimitExceeded, "Synchronization Request limit exceeded", ScopePhoneNumber, HoldNone, 0, 0),
	row(SyncOutsideWindow, "Synchronization Request made outside of allowed time window", ScopePhoneNumber, HoldNone, 0, 0),
}

var table = func() map[Code]Class {
	// Rows are grouped as Meta's page groups them; Codes lists them in
	// ascending order.
	slices.SortFunc(entries, func(a, b Class) int { return cmp.Compare(a.Code, b.Code) })
	m := make(map[Code]Class, len(entries))
	for _, e := range entries {
		if _, dup := m[e.Code]; dup {
			panic("errcodes: duplicate table entry " + strconv.Itoa(int(e.Code)))
		}
		m[e.Code] = e
	}
	return m
}()
