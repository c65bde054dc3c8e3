package errcodes_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wapace/wapace/errcodes"
)

func TestLookupNamedCodes(t *testing.T) {
	t.Parallel()
	type want struct {
		scope          errcodes.Scope
		retryable      bool
		throttling     bool
		outcomeUnknown bool
		wait           time.Duration
	}
	tests := map[errcodes.Code]want{
		errcodes.AuthException:                 {scope: errcodes.ScopeAuth},
		errcodes.APIUnknown:                    {scope: errcodes.ScopeUnknown, retryable: true, outcomeUnknown: true},
		errcodes.APIService:                    {scope: errcodes.ScopeUnknown, retryable: true, outcomeUnknown: true},
		errcodes.APIMethod:                     {scope: errcodes.ScopeAuth},
		errcodes.AppRateLimit:                  {scope: errcodes.ScopeApp, retryable: true, throttling: true},
		errcodes.PermissionDenied:              {scope: errcodes.ScopeAuth},
		errcodes.BusinessNumberDeleted:         {scope: errcodes.ScopeRequest},
		errcodes.InvalidParameter:              {scope: errcodes.ScopeRequest},
		errcodes.AccessTokenExpired:            {scope: errcodes.ScopeAuth},
		errcodes.APIPermission:                 {scope: errcodes.ScopeAuth},
		250:                                    {scope: errcodes.ScopeAuth},
		errcodes.APIPermissionLast:             {scope: errcodes.ScopeAuth},
		errcodes.PolicyBlocked:                 {scope: errcodes.ScopeBusiness},
		errcodes.WABARateLimit:                 {scope: errcodes.ScopeWABA, retryable: true, throttling: true},
		errcodes.WABAManagementRateLimit:       {scope: errcodes.ScopeWABA, retryable: true},
		errcodes.ThroughputLimit:               {scope: errcodes.ScopePhoneNumber, retryable: true, throttling: true},
		errcodes.Experiment:                    {scope: errcodes.ScopeRecipient},
		errcodes.CountryRestricted:             {scope: errcodes.ScopeBusiness},
		errcodes.SomethingWentWrong:            {scope: errcodes.ScopeUnknown, retryable: true, outcomeUnknown: true},
		errcodes.AccessDenied:                  {scope: errcodes.ScopeAuth},
		errcodes.MissingParameter:              {scope: errcodes.ScopeRequest},
		errcodes.InvalidParameterValue:         {scope: errcodes.ScopeRequest},
		errcodes.ServiceUnavailable:            {scope: errcodes.ScopeUnknown, retryable: true, outcomeUnknown: true},
		errcodes.RecipientIsSender:             {scope: errcodes.ScopeRequest},
		errcodes.Undeliverable:                 {scope: errcodes.ScopeRecipient},
		errcodes.RecipientNotAllowed:           {scope: errcodes.ScopeRecipient},
		errcodes.AccountLocked:                 {scope: errcodes.ScopeBusiness},
		errcodes.DisplayNameApproval:           {scope: errcodes.ScopePhoneNumber},
		errcodes.PaymentIssue:                  {scope: errcodes.ScopeBusiness},
		errcodes.IncorrectCertificate:          {scope: errcodes.ScopePhoneNumber},
		errcodes.ReEngagement:                  {scope: errcodes.ScopeRecipient},
		errcodes.SpamRateLimit:                 {scope: errcodes.ScopeBusiness, retryable: true, throttling: true},
		errcodes.MarketingLimit:                {scope: errcodes.ScopeRecipient, retryable: true, wait: 24 * time.Hour},
		errcodes.MarketingStopped:              {scope: errcodes.ScopeRecipient},
		errcodes.UnsupportedMessageType:        {scope: errcodes.ScopeRequest},
		errcodes.MediaDownload:                 {scope: errcodes.ScopeRequest},
		errcodes.MediaUpload:                   {scope: errcodes.ScopeRequest},
		errcodes.PairRateLimit:                 {scope: errcodes.ScopePair, retryable: true, throttling: true},
		errcodes.Maintenance:                   {scope: errcodes.ScopePhoneNumber, retryable: true, wait: time.Minute},
		errcodes.UnsupportedCountry:            {scope: errcodes.ScopeRecipient},
		errcodes.BusinessRateLimit:             {scope: errcodes.ScopeBusiness, retryable: true, throttling: true},
		errcodes.TemplateParamCount:            {scope: errcodes.ScopeRequest},
		errcodes.TemplateNotFound:              {scope: errcodes.ScopeRequest},
		errcodes.TemplateTooLong:               {scope: errcodes.ScopeRequest},
		errcodes.TemplateFormatPolicy:          {scope: errcodes.ScopeRequest},
		errcodes.TemplateParamFormat:           {scope: errcodes.ScopeRequest},
		errcodes.TemplatePaused:                {scope: errcodes.ScopeTemplate},
		errcodes.TemplateDisabled:              {scope: errcodes.ScopeTemplate},
		errcodes.TemplateParamsInvalid:         {scope: errcodes.ScopeRequest},
		errcodes.FlowBlocked:                   {scope: errcodes.ScopeTemplate},
		errcodes.FlowThrottled:                 {scope: errcodes.ScopeTemplate, retryable: true},
		errcodes.IncompleteDeregistration:      {scope: errcodes.ScopePhoneNumber},
		errcodes.RegistrationServerUnavailable: {scope: errcodes.ScopePhoneNumber, retryable: true},
		errcodes.PINMismatch:                   {scope: errcodes.ScopePhoneNumber},
		errcodes.ReverificationNeeded:          {scope: errcodes.ScopePhoneNumber},
		errcodes.TooManyPINGuesses:             {scope: errcodes.ScopePhoneNumber, retryable: true},
		errcodes.PINGuessedTooFast:             {scope: errcodes.ScopePhoneNumber, retryable: true},
		errcodes.NotRegistered:                 {scope: errcodes.ScopePhoneNumber},
		errcodes.RegisterWait:                  {scope: errcodes.ScopePhoneNumber, retryable: true},
		errcodes.RegisterRateLimit:             {scope: errcodes.ScopePhoneNumber, retryable: true, throttling: true},
		errcodes.AccountNotEligible:            {scope: errcodes.ScopeBusiness},
		errcodes.GenericUserError:              {scope: errcodes.ScopeRequest},
		errcodes.MaintenanceMode:               {scope: errcodes.ScopePhoneNumber, retryable: true, wait: time.Minute},
	}
	for code, w := range tests {
		t.Run(fmt.Sprint(int(code)), func(t *testing.T) {
			t.Parallel()
			cl := errcodes.Lookup(code)
			if !cl.Known || cl.Code != code || cl.Title == "" {
				t.Fatalf("Lookup(%d) = %+v, want a known class with a title", code, cl)
			}
			got := want{cl.Scope, cl.Retryable, cl.Throttling, cl.OutcomeUnknown, cl.Wait}
			if got != w {
				t.Errorf("Lookup(%d) = %+v, want %+v", code, got, w)
			}
		})
	}
	// Every code in the table is covered above, so a new row needs a test row.
	for _, c := range errcodes.Codes() {
		if _, ok := tests[c]; !ok {
			t.Errorf("code %d is in the table but has no test row", c)
		}
	}
}

func TestThrottlingGroupIsMetas(t *testing.T) {
	t.Parallel()
	want := map[errcodes.Code]bool{4: true, 80007: true, 130429: true, 131048: true, 131056: true, 131064: true, 133016: true}
	for _, c := range errcodes.Codes() {
		if got := errcodes.Lookup(c).Throttling; got != want[c] {
			t.Errorf("Lookup(%d).Throttling = %v, want %v", c, got, want[c])
		}
	}
}

func TestLookupUnknownIsConservative(t *testing.T) {
	t.Parallel()
	for _, c := range []errcodes.Code{-1, 5, 199, 300, 131055, 999999, 1 << 30} {
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
