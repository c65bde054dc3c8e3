package errcodes

import (
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
	// of the business's numbers (131049, 131050, 131026, 131047).
	ScopeRecipient
	// ScopePhoneNumber: this business phone number must wait (130429,
	// 131057, 2494100, registration errors).
	ScopePhoneNumber
	// ScopeApp: every call this app makes must slow down (4).
	ScopeApp
	// ScopeWABA: every call against this WhatsApp Business Account must slow
	// down (80007, 80008).
	ScopeWABA
	// ScopeBusiness: the whole account or business portfolio is affected
	// (368, 131031, 131042, 131048, 131064).
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

// Class is what wapace knows about one error code: Meta's title and group,
// what the error affects, and whether waiting can help.
type Class struct {
	// Code is the classified code.
	Code Code
	// Title is Meta's title for the code (informational: decide on Code).
	Title string
	// Known reports whether the code is in wapace's table. Unknown codes get
	// a conservative class: not retryable, scope unknown.
	Known bool
	// Throttling reports whether Meta files the code under "Throttling
	// errors" (4, 80007, 130429, 131048, 131056, 131064, 133016).
	Throttling bool
	// Scope says what else must wait.
	Scope Scope
	// Retryable reports whether sending the same request again later can
	// succeed. It says nothing about how soon: see Wait and Scope.
	Retryable bool
	// OutcomeUnknown reports whether, for a send, the error does not prove
	// that Meta refused the message: it may have been accepted all the same.
	// Such a send must be reconciled (status webhooks), never resent blindly.
	OutcomeUnknown bool
	// Wait is the minimum wait Meta's documentation implies before the
	// condition can clear, or zero where Meta gives no figure: 24 h for 131049
	// (retrying sooner extends the block), about a minute for 131057 and
	// 2494100 (maintenance during a throughput upgrade).
	Wait time.Duration
}

// Lookup returns the class of c. It is total: codes outside the table get
// Known == false, Scope == ScopeUnknown and Retryable == false. Every code of
// the permission range 200 to 299 is classified like APIPermission.
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
)

func row(c Code, title string, s Scope, flags int, wait time.Duration) Class {
	return Class{
		Code:           c,
		Title:          title,
		Known:          true,
		Throttling:     flags&throttling != 0,
		Scope:          s,
		Retryable:      flags&retryable != 0,
		OutcomeUnknown: flags&unknownOutcome != 0,
		Wait:           wait,
	}
}

// entries is the classification table, in ascending code order. Titles
// follow Meta's error code reference; scope and retryability are wapace's
// reading of Meta's descriptions and remedies.
var entries = []Class{
	row(AuthException, "AuthException", ScopeAuth, 0, 0),
	row(APIUnknown, "API Unknown", ScopeUnknown, retryable|unknownOutcome, 0),
	row(APIService, "API Service", ScopeUnknown, retryable|unknownOutcome, 0),
	row(APIMethod, "API Method", ScopeAuth, 0, 0),
	row(AppRateLimit, "API Too Many Calls", ScopeApp, throttling|retryable, 0),
	row(PermissionDenied, "Permission Denied", ScopeAuth, 0, 0),
	row(BusinessNumberDeleted, "Parameter value is not valid", ScopeRequest, 0, 0),
	row(InvalidParameter, "Invalid parameter", ScopeRequest, 0, 0),
	row(AccessTokenExpired, "Access token has expired", ScopeAuth, 0, 0),
	row(APIPermission, "API Permission", ScopeAuth, 0, 0),
	row(PolicyBlocked, "Temporarily blocked for policies violations", ScopeBusiness, 0, 0),
	row(WABARateLimit, "Rate limit issues", ScopeWABA, throttling|retryable, 0),
	row(WABAManagementRateLimit, "Too many calls to this WhatsApp Business Account", ScopeWABA, retryable, 0),
	row(ThroughputLimit, "Rate limit hit", ScopePhoneNumber, throttling|retryable, 0),
	row(Experiment, "User's number is part of an experiment", ScopeRecipient, 0, 0),
	row(CountryRestricted, "Business account is restricted from messaging users in this country", ScopeBusiness, 0, 0),
	row(SomethingWentWrong, "Something went wrong", ScopeUnknown, retryable|unknownOutcome, 0),
	row(AccessDenied, "Access denied", ScopeAuth, 0, 0),
	row(MissingParameter, "Required parameter is missing", ScopeRequest, 0, 0),
	row(InvalidParameterValue, "Parameter value is not valid", ScopeRequest, 0, 0),
	row(ServiceUnavailable, "Service unavailable", ScopeUnknown, retryable|unknownOutcome, 0),
	row(RecipientIsSender, "Recipient cannot be sender", ScopeRequest, 0, 0),
	row(Undeliverable, "Message Undeliverable", ScopeRecipient, 0, 0),
	row(RecipientNotAllowed, "Recipient phone number not in allowed list", ScopeRecipient, 0, 0),
	row(AccountLocked, "Account has been locked", ScopeBusiness, 0, 0),
	row(DisplayNameApproval, "WhatsApp provided number needs display name approval before message can be sent", ScopePhoneNumber, 0, 0),
	row(PaymentIssue, "Business eligibility payment issue", ScopeBusiness, 0, 0),
	row(IncorrectCertificate, "Incorrect certificate", ScopePhoneNumber, 0, 0),
	row(ReEngagement, "Re-engagement message", ScopeRecipient, 0, 0),
	row(SpamRateLimit, "Spam rate limit hit", ScopeBusiness, throttling|retryable, 0),
	row(MarketingLimit, "Meta chose not to deliver", ScopeRecipient, retryable, 24*time.Hour),
	row(MarketingStopped, "User stopped marketing messages", ScopeRecipient, 0, 0),
	row(UnsupportedMessageType, "Unsupported message type", ScopeRequest, 0, 0),
	row(MediaDownload, "Media download error", ScopeRequest, 0, 0),
	row(MediaUpload, "Media upload error", ScopeRequest, 0, 0),
	row(PairRateLimit, "(Business Account, Consumer Account) pair rate limit hit", ScopePair, throttling|retryable, 0),
	row(Maintenance, "Account in maintenance mode", ScopePhoneNumber, retryable, time.Minute),
	row(UnsupportedCountry, "Country not supported", ScopeRecipient, 0, 0),
	row(BusinessRateLimit, "Business rate limit hit", ScopeBusiness, throttling|retryable, 0),
	row(TemplateParamCount, "Template Param Count Mismatch", ScopeRequest, 0, 0),
	row(TemplateNotFound, "Template does not exist", ScopeRequest, 0, 0),
	row(TemplateTooLong, "Template Hydrated Text Too Long", ScopeRequest, 0, 0),
	row(TemplateFormatPolicy, "Template Format Character Policy Violated", ScopeRequest, 0, 0),
	row(TemplateParamFormat, "Template Parameter Format Mismatch", ScopeRequest, 0, 0),
	row(TemplatePaused, "Template is Paused", ScopeTemplate, 0, 0),
	row(TemplateDisabled, "Template is Disabled", ScopeTemplate, 0, 0),
	row(TemplateParamsInvalid, "Template parameters invalid", ScopeRequest, 0, 0),
	row(FlowBlocked, "Flow is blocked", ScopeTemplate, 0, 0),
	row(FlowThrottled, "Flow is throttled", ScopeTemplate, retryable, 0),
	row(IncompleteDeregistration, "Incomplete Deregistration", ScopePhoneNumber, 0, 0),
	row(RegistrationServerUnavailable, "Server Temporarily Unavailable", ScopePhoneNumber, retryable, 0),
	row(PINMismatch, "Two step verification PIN Mismatch", ScopePhoneNumber, 0, 0),
	row(ReverificationNeeded, "Phone number Re-verification Needed", ScopePhoneNumber, 0, 0),
	row(TooManyPINGuesses, "Too Many two step verification PIN Guesses", ScopePhoneNumber, retryable, 0),
	row(PINGuessedTooFast, "Two step verification PIN Guessed Too Fast", ScopePhoneNumber, retryable, 0),
	row(NotRegistered, "Phone number Not Registered", ScopePhoneNumber, 0, 0),
	row(RegisterWait, "Please wait a few minutes before attempting to register this phone number", ScopePhoneNumber, retryable, 0),
	row(RegisterRateLimit, "Account register deregister rate limit exceeded", ScopePhoneNumber, throttling|retryable, 0),
	row(AccountNotEligible, "Business account not eligible", ScopeBusiness, 0, 0),
	row(GenericUserError, "Generic user error", ScopeRequest, 0, 0),
	row(MaintenanceMode, "Account in maintenance mode", ScopePhoneNumber, retryable, time.Minute),
}

var table = func() map[Code]Class {
	m := make(map[Code]Class, len(entries))
	for _, e := range entries {
		if _, dup := m[e.Code]; dup {
			panic("errcodes: duplicate table entry " + strconv.Itoa(int(e.Code)))
		}
		m[e.Code] = e
	}
	return m
}()
