package errcodes_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wapace/wapace/errcodes"
)

// Pages the catalogue is pinned against. Every row of TestCatalogue names the
// page its title, scope and wait come from.
const (
	// metaErrorCodes is Meta's "WhatsApp error codes" page
	// (developers.facebook.com/documentation/business-messaging/whatsapp/support/error-codes,
	// updated June 2026).
	metaErrorCodes = "whatsapp/support/error-codes"
	// graphErrors is the Graph API's error-handling and rate-limiting pages
	// (docs/graph-api/guides/error-handling, overview/rate-limiting), which
	// list 613 with the throttling codes (custom-level throttling).
	graphErrors = "graph-api/guides/error-handling"
	// marketingLimits is Meta's per-user marketing message limits page
	// (131049: wait at least 24 h).
	marketingLimits = "whatsapp/pricing/per-user-marketing-limits"
	// throughputPage is Meta's throughput page (131057 during an upgrade,
	// about a minute).
	throughputPage = "whatsapp/throughput"
	// marketingAPI is Meta's Marketing Messages API for WhatsApp support
	// page (its error codes beyond Cloud API's).
	marketingAPI = "whatsapp/marketing-messages/support"
	// migration is Meta's phone number migration pages (2388xxx codes on
	// the WhatsApp error codes page).
	migration = "whatsapp/business-management-api/phone-numbers/migration"
	// unlisted marks codes seen in other clients' traffic but absent from
	// Meta's pages: classified conservatively.
	unlisted = "unlisted"
)

func TestCatalogue(t *testing.T) {
	t.Parallel()
	type want struct {
		page  string
		title string
		scope errcodes.Scope
		hold  errcodes.Hold
		flags string // r retryable, t throttling, u outcome unknown, 5 refused even at 5xx
		wait  time.Duration
	}
	const (
		na = errcodes.HoldNone
	)
	tests := map[errcodes.Code]want{
		errcodes.AuthException:                 {metaErrorCodes, "AuthException", errcodes.ScopeAuth, na, "", 0},
		errcodes.APIUnknown:                    {metaErrorCodes, "API Unknown", errcodes.ScopeUnknown, na, "ru", 0},
		errcodes.APIService:                    {metaErrorCodes, "API Service", errcodes.ScopeUnknown, na, "ru", 0},
		errcodes.APIMethod:                     {metaErrorCodes, "API Method", errcodes.ScopeAuth, na, "", 0},
		errcodes.AppRateLimit:                  {metaErrorCodes, "API Too Many Calls", errcodes.ScopeApp, errcodes.HoldApp, "rt", time.Minute},
		errcodes.PermissionDenied:              {metaErrorCodes, "Permission Denied", errcodes.ScopeAuth, na, "", 0},
		errcodes.BusinessNumberDeleted:         {metaErrorCodes, "Parameter value is not valid", errcodes.ScopeRequest, na, "", 0},
		errcodes.InvalidParameter:              {metaErrorCodes, "Invalid parameter", errcodes.ScopeRequest, na, "", 0},
		errcodes.AccessTokenExpired:            {metaErrorCodes, "Access token has expired", errcodes.ScopeAuth, na, "", 0},
		errcodes.APIPermission:                 {metaErrorCodes, "API Permission", errcodes.ScopeAuth, na, "", 0},
		errcodes.PolicyBlocked:                 {metaErrorCodes, "Temporarily blocked for policies violations", errcodes.ScopeBusiness, na, "", 0},
		errcodes.GraphRateLimit:                {graphErrors, "Calls to this api have exceeded the rate limit", errcodes.ScopeApp, errcodes.HoldApp, "rt", time.Minute},
		12455:                                  {unlisted, "Unlisted code 12455 (not on Meta's error codes page)", errcodes.ScopeUnknown, na, "", 0},
		errcodes.WABARateLimit:                 {metaErrorCodes, "Rate limit issues", errcodes.ScopeWABA, errcodes.HoldWABA, "rt", time.Minute},
		errcodes.WABAManagementRateLimit:       {metaErrorCodes, "Too many calls to this WhatsApp Business Account", errcodes.ScopeWABA, errcodes.HoldWABA, "r", time.Minute},
		errcodes.BlockedByBusiness:             {metaErrorCodes, "The business blocked this user", errcodes.ScopeRecipient, na, "", 0},
		errcodes.ThroughputLimit:               {metaErrorCodes, "Rate limit hit", errcodes.ScopePhoneNumber, errcodes.HoldPhoneNumber, "rt", time.Second},
		errcodes.Experiment:                    {metaErrorCodes, "User's number is part of an experiment", errcodes.ScopeRecipient, na, "", 0},
		errcodes.CountryRestricted:             {metaErrorCodes, "Business account is restricted from messaging users in this country", errcodes.ScopeRecipient, na, "", 0},
		errcodes.SomethingWentWrong:            {metaErrorCodes, "Something went wrong", errcodes.ScopeUnknown, na, "ru", 0},
		errcodes.AccessDenied:                  {metaErrorCodes, "Access denied", errcodes.ScopeAuth, na, "", 0},
		errcodes.MissingParameter:              {metaErrorCodes, "Required parameter is missing", errcodes.ScopeRequest, na, "", 0},
		errcodes.InvalidParameterValue:         {metaErrorCodes, "Parameter value is not valid", errcodes.ScopeRequest, na, "", 0},
		131014:                                 {unlisted, "Unlisted code 131014 (not on Meta's error codes page)", errcodes.ScopeUnknown, na, "", 0},
		errcodes.ServiceUnavailable:            {metaErrorCodes, "Service unavailable", errcodes.ScopeUnknown, na, "ru", 0},
		errcodes.RecipientIsSender:             {metaErrorCodes, "Recipient cannot be sender", errcodes.ScopeRequest, na, "", 0},
		errcodes.Undeliverable:                 {metaErrorCodes, "Message Undeliverable", errcodes.ScopeRecipient, na, "", 0},
		errcodes.RecipientNotAllowed:           {metaErrorCodes, "Recipient phone number not in allowed list", errcodes.ScopeRecipient, na, "", 0},
		errcodes.AccountLocked:                 {metaErrorCodes, "Account has been locked", errcodes.ScopeBusiness, na, "", 0},
		errcodes.DisplayNameApproval:           {metaErrorCodes, "WhatsApp provided number needs display name approval before message can be sent", errcodes.ScopePhoneNumber, na, "", 0},
		errcodes.PaymentIssue:                  {metaErrorCodes, "Business eligibility payment issue", errcodes.ScopeBusiness, na, "", 0},
		errcodes.IncorrectCertificate:          {metaErrorCodes, "Incorrect certificate", errcodes.ScopePhoneNumber, na, "", 0},
		errcodes.ReEngagement:                  {metaErrorCodes, "Re-engagement message", errcodes.ScopeRecipient, na, "", 0},
		errcodes.SpamRateLimit:                 {metaErrorCodes, "Spam rate limit hit", errcodes.ScopePhoneNumber, errcodes.HoldPhoneNumber, "rt", 0},
		errcodes.MarketingLimit:                {marketingLimits, "Meta chose not to deliver", errcodes.ScopeRecipient, errcodes.HoldRecipient, "r", 24 * time.Hour},
		errcodes.MarketingStopped:              {metaErrorCodes, "User stopped marketing messages", errcodes.ScopeRecipient, na, "", 0},
		errcodes.UnsupportedMessageType:        {metaErrorCodes, "Unsupported message type", errcodes.ScopeRequest, na, "", 0},
		errcodes.MediaDownload:                 {metaErrorCodes, "Media download error", errcodes.ScopeRequest, na, "", 0},
		errcodes.MediaUpload:                   {metaErrorCodes, "Media upload error", errcodes.ScopeRequest, na, "", 0},
		errcodes.PairRateLimit:                 {metaErrorCodes, "(Business Account, Consumer Account) pair rate limit hit", errcodes.ScopePair, errcodes.HoldPair, "rt", 0},
		errcodes.Maintenance:                   {throughputPage, "Account in maintenance mode", errcodes.ScopePhoneNumber, errcodes.HoldPhoneNumber, "r", 10 * time.Second},
		errcodes.BSUIDNotSupported:             {metaErrorCodes, "Business-scoped user ID recipients are not supported for this message", errcodes.ScopeRequest, na, "", 0},
		errcodes.MarketingTemplatesDisabled:    {metaErrorCodes, "Marketing templates disabled for Cloud API", errcodes.ScopeWABA, na, "", 0},
		errcodes.BusinessRateLimit:             {metaErrorCodes, "Messaging limit after template classification violations", errcodes.ScopeBusiness, errcodes.HoldTier, "rt", 0},
		errcodes.TemplateParamCount:            {metaErrorCodes, "Template Param Count Mismatch", errcodes.ScopeRequest, na, "", 0},
		errcodes.TemplateNotFound:              {metaErrorCodes, "Template does not exist", errcodes.ScopeRequest, na, "", 0},
		errcodes.TemplateTooLong:               {metaErrorCodes, "Template Hydrated Text Too Long", errcodes.ScopeRequest, na, "", 0},
		errcodes.TemplateFormatPolicy:          {metaErrorCodes, "Template Format Character Policy Violated", errcodes.ScopeRequest, na, "", 0},
		errcodes.TemplateParamFormat:           {metaErrorCodes, "Template Parameter Format Mismatch", errcodes.ScopeRequest, na, "", 0},
		errcodes.TemplatePaused:                {metaErrorCodes, "Template is Paused", errcodes.ScopeTemplate, na, "", 0},
		errcodes.TemplateDisabled:              {metaErrorCodes, "Template is Disabled", errcodes.ScopeTemplate, na, "", 0},
		errcodes.TemplateValidation:            {metaErrorCodes, "Template validation error", errcodes.ScopeRequest, na, "", 0},
		errcodes.FlowBlocked:                   {metaErrorCodes, "Flow is blocked", errcodes.ScopeTemplate, na, "", 0},
		errcodes.FlowThrottled:                 {metaErrorCodes, "Flow is throttled", errcodes.ScopeTemplate, na, "r", 0},
		errcodes.IncompleteDeregistration:      {metaErrorCodes, "Incomplete Deregistration", errcodes.ScopePhoneNumber, na, "", 0},
		errcodes.RegistrationServerUnavailable: {metaErrorCodes, "Server Temporarily Unavailable", errcodes.ScopePhoneNumber, na, "r", 0},
		errcodes.PINMismatch:                   {metaErrorCodes, "Two step verification PIN Mismatch", errcodes.ScopePhoneNumber, na, "", 0},
		errcodes.ReverificationNeeded:          {metaErrorCodes, "Phone number Re-verification Needed", errcodes.ScopePhoneNumber, na, "", 0},
		errcodes.TooManyPINGuesses:             {metaErrorCodes, "Too Many two step verification PIN Guesses", errcodes.ScopePhoneNumber, na, "r", 0},
		errcodes.PINGuessedTooFast:             {metaErrorCodes, "Two step verification PIN Guessed Too Fast", errcodes.ScopePhoneNumber, na, "r", 0},
		errcodes.NotRegistered:                 {metaErrorCodes, "Phone number Not Registered", errcodes.ScopePhoneNumber, na, "", 0},
		errcodes.RegisterWait:                  {metaErrorCodes, "Please wait a few minutes before attempting to register this phone number", errcodes.ScopePhoneNumber, na, "r", 5 * time.Minute},
		errcodes.RegisterRateLimit:             {metaErrorCodes, "Account register deregister rate limit exceeded", errcodes.ScopePhoneNumber, na, "rt", 0},
		errcodes.PaymentsTermsPending:          {metaErrorCodes, "WhatsApp Payments terms of service acceptance pending", errcodes.ScopeBusiness, na, "", 0},
		errcodes.GenericUserError:              {metaErrorCodes, "Generic user error", errcodes.ScopeRequest, na, "", 0},
		errcodes.MaintenanceMode:               {metaErrorCodes, "Maintenance mode: try again in a few minutes", errcodes.ScopePhoneNumber, errcodes.HoldPhoneNumber, "r5", 2 * time.Minute},
		errcodes.MarketingAPINotAllowed:        {marketingAPI, "Method not allowed", errcodes.ScopeRequest, na, "", 0},
		errcodes.MarketingAPITemplateCategory:  {marketingAPI, "Only marketing messages supported", errcodes.ScopeRequest, na, "", 0},
		errcodes.MarketingAPITemplateSync:      {marketingAPI, "Your template is still syncing", errcodes.ScopeTemplate, na, "r", 10 * time.Minute},
		errcodes.MarketingAPINotEligible:       {marketingAPI, "Template unavailable for use", errcodes.ScopeWABA, na, "5", 0},
		errcodes.MarketingAPIDuplicateRequest:  {marketingAPI, "Duplicate Request", errcodes.ScopeBusiness, na, "", 0},
		errcodes.TemplateInsightsUnavailable:   {metaErrorCodes, "Template insights unavailable", errcodes.ScopeWABA, na, "", 0},
		errcodes.TemplateInsightsPermanent:     {metaErrorCodes, "Cannot disable template insights", errcodes.ScopeRequest, na, "", 0},
		errcodes.TemplateInsightsNotEnabled:    {metaErrorCodes, "Template Insights not enabled", errcodes.ScopeWABA, na, "", 0},
		errcodes.TemplateLimitExceeded:         {metaErrorCodes, "Message Template Limit Exceeded", errcodes.ScopeWABA, na, "", 0},
		errcodes.TemplateCharacterLimit:        {metaErrorCodes, "Character limit exceeded", errcodes.ScopeRequest, na, "", 0},
		errcodes.TemplateHeaderFormat:          {metaErrorCodes, "Message header format is incorrect", errcodes.ScopeRequest, na, "", 0},
		errcodes.TemplateBodyFormat:            {metaErrorCodes, "Message body format is incorrect", errcodes.ScopeRequest, na, "", 0},
		errcodes.TemplateFooterFormat:          {metaErrorCodes, "Message footer format is incorrect", errcodes.ScopeRequest, na, "", 0},
		errcodes.TemplateParamRatio:            {metaErrorCodes, "Parameters words ratio exceeds limit", errcodes.ScopeRequest, na, "", 0},
		errcodes.TemplateParamPosition:         {metaErrorCodes, "Leading or trailing parameters not allowed", errcodes.ScopeRequest, na, "", 0},
		errcodes.MigrationOwnership:            {migration, "Please confirm ownership of this phone number", errcodes.ScopePhoneNumber, na, "", 0},
		errcodes.MigrationNotPossible:          {migration, "Cannot migrate phone number", errcodes.ScopePhoneNumber, na, "", 0},
		errcodes.WABAMigrationMarked:           {metaErrorCodes, "WhatsApp Business Account already marked for migration to a different solution ID", errcodes.ScopeWABA, na, "", 0},
		errcodes.WABAInvalidForOBOMobility:     {metaErrorCodes, "Invalid WhatsApp Business Account for OBO Mobility", errcodes.ScopeWABA, na, "", 0},
		errcodes.SyncLimitExceeded:             {metaErrorCodes, "Synchronization Request limit exceeded", errcodes.ScopePhoneNumber, na, "", 0},
		errcodes.SyncOutsideWindow:             {metaErrorCodes, "Synchronization Request made outside of allowed time window", errcodes.ScopePhoneNumber, na, "", 0},
		errcodes.PhoneNumberExists:             {migration, "Phone number already exists in your account", errcodes.ScopeRequest, na, "", 0},
		errcodes.MigrationCodeNotEligible:      {migration, "Phone number not eligible for a registration code (migration only)", errcodes.ScopeRequest, na, "", 0},
		errcodes.MigrationVerifyNotEligible:    {migration, "Phone number not eligible for code verification (migration only)", errcodes.ScopeRequest, na, "", 0},
	}
	flags := func(cl errcodes.Class) string {
		var b []byte
		for _, f := range []struct {
			on bool
			c  byte
		}{{cl.Retryable, 'r'}, {cl.Throttling, 't'}, {cl.OutcomeUnknown, 'u'}, {cl.RefusedOn5xx, '5'}} {
			if f.on {
				b = append(b, f.c)
			}
		}
		return string(b)
	}
	for code, w := range tests {
		t.Run(fmt.Sprintf("%d/%s", int(code), w.page), func(t *testing.T) {
			t.Parallel()
			cl := errcodes.Lookup(code)
			if !cl.Known || cl.Code != code {
				t.Fatalf("Lookup(%d) = %+v, want a known class", code, cl)
			}
			got := want{w.page, cl.Title, cl.Scope, cl.Hold, flags(cl), cl.Wait}
			if got != w {
				t.Errorf("Lookup(%d) per %s:\n got %+v\nwant %+v", code, w.page, got, w)
			}
		})
	}
	// Every code in the table is pinned above, so a new row needs a test row.
	for _, c := range errcodes.Codes() {
		if _, ok := tests[c]; !ok {
			t.Errorf("code %d is in the table but has no test row", c)
		}
	}
	// The permission range is classified like its first code.
	if cl := errcodes.Lookup(250); !cl.Known || cl.Scope != errcodes.ScopeAuth || cl.Code != 250 {
		t.Errorf("Lookup(250) = %+v, want the API Permission class", cl)
	}
}

// TestIssue12Corrections pins each correction the catalogue issue asked for,
// against Meta's error codes page, so that a regression names the rule.
func TestIssue12Corrections(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ok   bool
	}{
		{"131063 is marketing templates disabled, WABA-wide", errcodes.Lookup(131063).Scope == errcodes.ScopeWABA && !errcodes.Lookup(131063).Retryable},
		{"131064 is a throttling messaging limit that waiting lifts", errcodes.Lookup(131064).Throttling && errcodes.Lookup(131064).Retryable && errcodes.Lookup(131064).Hold == errcodes.HoldTier},
		{"134011 is payments terms pending", errcodes.Lookup(134011).Title == "WhatsApp Payments terms of service acceptance pending"},
		{"132018 is template validation error", errcodes.Lookup(132018).Title == "Template validation error"},
		{"130403 is known and never retried", errcodes.Lookup(130403).Known && !errcodes.Lookup(130403).Retryable},
		{"131062 is known and never retried", errcodes.Lookup(131062).Known && !errcodes.Lookup(131062).Retryable},
		{"131048 holds the phone number", errcodes.Lookup(131048).Scope == errcodes.ScopePhoneNumber && errcodes.Lookup(131048).Hold == errcodes.HoldPhoneNumber},
		{"130497 concerns recipients", errcodes.Lookup(130497).Scope == errcodes.ScopeRecipient},
		{"133015 waits 5 minutes", errcodes.Lookup(133015).Wait == 5*time.Minute},
		{"2494100 waits a few minutes", errcodes.Lookup(2494100).Wait >= 2*time.Minute},
		{"613 is a rate limit", errcodes.Lookup(613).Throttling && errcodes.Lookup(613).Retryable && errcodes.Lookup(613).Hold == errcodes.HoldApp},
		{"131014 is known", errcodes.Lookup(131014).Known},
		{"12455 is known", errcodes.Lookup(12455).Known},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("%s: does not hold", tt.name)
		}
	}
}

func TestNotSent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code   errcodes.Code
		status int
		want   bool
	}{
		{errcodes.PairRateLimit, 400, true},
		{errcodes.PairRateLimit, 429, true},
		{errcodes.PairRateLimit, 500, false}, // issue 11 item 1: a 5xx may have acted
		{errcodes.InvalidParameter, 502, false},
		{errcodes.InvalidParameter, 400, true},
		{errcodes.MaintenanceMode, 503, true}, // Meta documents 2494100 at 503
		{errcodes.APIService, 503, false},
		{errcodes.SomethingWentWrong, 400, false},
		{errcodes.ServiceUnavailable, 400, false},
		{errcodes.APIUnknown, 400, false},
		{5, 400, true}, // an unknown code below 500 is still Meta's refusal
		{5, 500, false},
	}
	for _, tt := range tests {
		if got := errcodes.Lookup(tt.code).NotSent(tt.status); got != tt.want {
			t.Errorf("Lookup(%d).NotSent(%d) = %v, want %v", tt.code, tt.status, got, tt.want)
		}
	}
}

func TestHoldString(t *testing.T) {
	t.Parallel()
	for h, want := range map[errcodes.Hold]string{
		errcodes.HoldNone: "none", errcodes.HoldPair: "pair", errcodes.HoldPhoneNumber: "phone_number",
		errcodes.HoldApp: "app", errcodes.HoldWABA: "waba", errcodes.HoldTier: "tier",
		errcodes.HoldRecipient: "recipient", errcodes.Hold(42): "hold(42)",
	} {
		if got := h.String(); got != want {
			t.Errorf("Hold(%d).String() = %q, want %q", int(h), got, want)
		}
	}
}

func TestThrottlingGroupIsMetas(t *testing.T) {
	t.Parallel()
	want := map[errcodes.Code]bool{4: true, 613: true, 80007: true, 130429: true, 131048: true, 131056: true, 131064: true, 133016: true}
	for _, c := range errcodes.Codes() {
		if got := errcodes.Lookup(c).Throttling; got != want[c] {
			t.Errorf("Lookup(%d).Throttling = %v, want %v", c, got, want[c])
		}
	}
}

func TestLookupUnknownIsConservative(t *testing.T) {
	t.Parallel()
	for _, c := range []errcodes.Code{-1, 5, 199, 300, 131054, 999999, 1 << 30} {
		cl := errcodes.Lookup(c)
		if cl.Known || cl.Retryable || cl.Scope != errcodes.ScopeUnknown || cl.Code != c || cl.OutcomeUnknown {
			t.Errorf("Lookup(%d) = %+v, want unknown, not retryable", c, cl)
		}
	}
}

func TestCodeIsSentinel(t *testing.T) {
	t.Parallel()
	e := &errcodes.Error{HTTPStatus: 400, Code: errcodes.PairRateLimit}
	wrapped := fmt.Errorf("send: %w", e)
	if !errors.Is(wrapped, errcodes.PairRateLimit) {
		t.Error("errors.Is(wrapped 131056, PairRateLimit) = false")
	}
	if errors.Is(wrapped, errcodes.ThroughputLimit) {
		t.Error("errors.Is(wrapped 131056, ThroughputLimit) = true")
	}
	var got *errcodes.Error
	if !errors.As(wrapped, &got) || got != e {
		t.Error("errors.As did not find the *Error")
	}
	if !errors.Is(fmt.Errorf("x: %w", errcodes.Maintenance), errcodes.Maintenance) {
		t.Error("a wrapped Code does not match itself")
	}
}

func TestScopeString(t *testing.T) {
	t.Parallel()
	for s, want := range map[errcodes.Scope]string{
		errcodes.ScopeUnknown: "unknown", errcodes.ScopePair: "pair",
		errcodes.ScopePhoneNumber: "phone_number", errcodes.ScopeTemplate: "template",
		errcodes.Scope(99): "scope(99)", errcodes.Scope(-1): "scope(-1)",
	} {
		if got := s.String(); got != want {
			t.Errorf("Scope(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

func TestCodeError(t *testing.T) {
	t.Parallel()
	if got, want := errcodes.PairRateLimit.Error(), "errcodes: 131056 (Business Account, Consumer Account) pair rate limit hit"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := errcodes.Code(5).Error(), "errcodes: unknown code 5"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
