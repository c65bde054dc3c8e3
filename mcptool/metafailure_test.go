package mcptool

import (
	"testing"
	"time"

	"github.com/wapace/wapace/errcodes"
)

// TestMetaFailureFollowsErrcodes pins the tool result of each refusal
// code; the mapping reads errcodes' class, not a list of its own. The
// codes the tools listed by hand keep their results (131021, recipient is
// sender, is now an invalid request, as errcodes scopes it).
func TestMetaFailureFollowsErrcodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code  errcodes.Code
		want  string
		retry bool
	}{
		{errcodes.ReEngagement, CodeWindowClosed, false},
		{errcodes.Undeliverable, CodeNotDeliverable, false},
		{errcodes.RecipientNotAllowed, CodeNotDeliverable, false},
		{errcodes.MarketingStopped, CodeNotDeliverable, false},
		{errcodes.MarketingLimit, CodeNotDeliverable, false},
		{errcodes.Experiment, CodeNotDeliverable, false},
		{errcodes.BlockedByBusiness, CodeNotDeliverable, false},
		{errcodes.CountryRestricted, CodeNotDeliverable, false},
		{errcodes.RecipientIsSender, CodeInvalidMessage, false},
		{errcodes.InvalidParameter, CodeInvalidMessage, false},
		{errcodes.MissingParameter, CodeInvalidMessage, false},
		{errcodes.InvalidParameterValue, CodeInvalidMessage, false},
		{errcodes.UnsupportedMessageType, CodeInvalidMessage, false},
		{errcodes.MediaUpload, CodeInvalidMessage, false},
		{errcodes.BSUIDNotSupported, CodeInvalidMessage, false},
		{errcodes.TemplateParamCount, CodeInvalidMessage, false},
		{errcodes.TemplateNotFound, CodeInvalidMessage, false},
		{errcodes.TemplateTooLong, CodeInvalidMessage, false},
		{errcodes.TemplateFormatPolicy, CodeInvalidMessage, false},
		{errcodes.TemplateParamFormat, CodeInvalidMessage, false},
		{errcodes.TemplatePaused, CodeInvalidMessage, false},
		{errcodes.TemplateDisabled, CodeInvalidMessage, false},
		{errcodes.TemplateValidation, CodeInvalidMessage, false},
		{errcodes.MarketingAPITemplateCategory, CodeInvalidMessage, false},
		{errcodes.MarketingAPITemplateSync, CodeSendFailed, true}, // waiting 10 min helps
		{errcodes.FlowThrottled, CodeSendFailed, true},
		{errcodes.PairRateLimit, CodeBackpressure, true},
		{errcodes.ThroughputLimit, CodeBackpressure, true},
		{errcodes.SomethingWentWrong, CodeOutcomeUnknown, false},
		{errcodes.AccessTokenExpired, CodeSendFailed, false},
		{errcodes.SyncLimitExceeded, CodeSendFailed, false},
	}
	for _, tc := range tests {
		te := metaFailure(tc.code, time.Time{}, "k", "send_message")
		if te.res.Code != tc.want || te.res.Retryable == nil || *te.res.Retryable != tc.retry {
			t.Errorf("%d: %s retryable %v, want %s retryable %v", tc.code, te.res.Code, deref(te.res.Retryable), tc.want, tc.retry)
		}
	}
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}
