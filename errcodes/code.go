package errcodes

import "strconv"

// Code is a Graph API error code as the WhatsApp Cloud API returns it in the
// "code" member of an error object.
//
// Code implements error, so the named constants are sentinels:
// errors.Is(err, errcodes.PairRateLimit) reports whether err, however
// wrapped, carries code 131056.
type Code int

// Error returns a short, log-safe description such as
// "errcodes: 131056 (Business Account, Consumer Account) pair rate limit hit".
func (c Code) Error() string {
	cl := Lookup(c)
	if !cl.Known {
		return "errcodes: unknown code " + strconv.Itoa(int(c))
	}
	return "errcodes: " + strconv.Itoa(int(c)) + " " + cl.Title
}

// Class returns the classification of c. It is shorthand for Lookup(c).
func (c Code) Class() Class { return Lookup(c) }

// Authorization errors. Meta documents these as problems with the access
// token or its permissions: nothing is gained by retrying until a person
// fixes the token.
const (
	// AuthException (0): Meta could not authenticate the app user; typically
	// the access token expired or was invalidated.
	AuthException Code = 0
	// APIMethod (3): capability or permissions issue with the token.
	APIMethod Code = 3
	// PermissionDenied (10): a permission was not granted or was removed.
	PermissionDenied Code = 10
	// AccessTokenExpired (190): the access token has expired.
	AccessTokenExpired Code = 190
	// APIPermission (200) is the first code of the 200 to 299 permission
	// range: a permission was not granted or was removed. Lookup classifies
	// every code of the range alike.
	APIPermission Code = 200
	// APIPermissionLast (299) is the last code of the permission range.
	APIPermissionLast Code = 299
)

// Throttling errors: Meta's own "Throttling errors" group.
const (
	// AppRateLimit (4): the app has reached its API call rate limit. Only this
	// app's calls must slow down.
	AppRateLimit Code = 4
	// GraphRateLimit (613): "Calls to this api have exceeded the rate limit",
	// the Graph API's custom-level throttling code (Graph API error handling
	// and rate limiting pages: wait and retry, or lower the call volume). Not
	// a permanent failure: the app's calls must slow down.
	GraphRateLimit Code = 613
	// WABARateLimit (80007): the WhatsApp Business Account has reached its
	// API rate limit.
	WABARateLimit Code = 80007
	// ThroughputLimit (130429): Cloud API message throughput has been reached
	// for this business phone number (80 messages/s by default).
	ThroughputLimit Code = 130429
	// SpamRateLimit (131048): restrictions on how many messages this phone
	// number may send, because too many earlier messages were blocked or
	// flagged as spam. It holds this phone number, not the whole business;
	// quality, not pacing, lifts it.
	SpamRateLimit Code = 131048
	// PairRateLimit (131056): too many messages from the business number to
	// the same recipient in a short time (1 message every 6 s, bursts of up to
	// 45 borrowed from future quota). Only that pair must wait.
	PairRateLimit Code = 131056
	// BusinessRateLimit (131064): the messaging limit Meta imposes after
	// template-classification violations (marketing content sent as utility
	// or authentication templates). Meta files it under throttling errors; it
	// is lifted after the enforcement period, so it holds the portfolio's
	// messaging limit (HoldTier) rather than failing for good.
	BusinessRateLimit Code = 131064
	// RegisterRateLimit (133016): too many register or deregister attempts
	// for this phone number in a short time.
	RegisterRateLimit Code = 133016
)

// Integrity and account errors.
const (
	// PolicyBlocked (368): the WhatsApp Business Account was restricted or
	// disabled for violating a platform policy.
	PolicyBlocked Code = 368
	// CountryRestricted (130497): the business account is restricted from
	// messaging recipients in certain countries. It concerns the recipient:
	// recipients elsewhere are unaffected.
	CountryRestricted Code = 130497
	// AccountLocked (131031): the account was locked for a policy violation
	// or because data in the request (such as the two-step PIN) did not match.
	AccountLocked Code = 131031
	// PaymentIssue (131042): business eligibility payment issue (no valid
	// payment method, credit line over limit, and the like).
	PaymentIssue Code = 131042
	// PaymentsTermsPending (134011): WhatsApp Payments terms of service
	// acceptance pending.
	PaymentsTermsPending Code = 134011
)

// General and server-side errors. For a send, several of these leave it
// unknown whether Meta accepted the message (see Class.OutcomeUnknown).
const (
	// APIUnknown (1): invalid request or possible server error.
	APIUnknown Code = 1
	// APIService (2): temporary downtime or overload.
	APIService Code = 2
	// BusinessNumberDeleted (33): "Parameter value is not valid"; the business
	// phone number has been deleted.
	BusinessNumberDeleted Code = 33
	// InvalidParameter (100): unsupported or misspelled parameter.
	InvalidParameter Code = 100
	// WABAManagementRateLimit (80008): too many calls to this WhatsApp
	// Business Account (management endpoints).
	WABAManagementRateLimit Code = 80008
	// BlockedByBusiness (130403): the business blocked this user (Block Users
	// API), so it cannot message them. Do not retry; unblock first.
	BlockedByBusiness Code = 130403
	// Experiment (130472): the message was not sent because the user's number
	// is part of a marketing message experiment.
	Experiment Code = 130472
	// SomethingWentWrong (131000): the message failed for an unknown reason.
	SomethingWentWrong Code = 131000
	// AccessDenied (131005): permission was not granted or was removed.
	AccessDenied Code = 131005
	// MissingParameter (131008): a required parameter is missing.
	MissingParameter Code = 131008
	// InvalidParameterValue (131009): a parameter value is not valid.
	InvalidParameterValue Code = 131009
	// ServiceUnavailable (131016): a service is temporarily unavailable.
	ServiceUnavailable Code = 131016
	// RecipientIsSender (131021): the recipient phone number is the sender's.
	RecipientIsSender Code = 131021
	// Undeliverable (131026): the message could not be delivered (not a
	// WhatsApp user, old client, terms not accepted, blocked, ...).
	Undeliverable Code = 131026
	// RecipientNotAllowed (131030): the recipient is not in the test number's
	// allowed list.
	RecipientNotAllowed Code = 131030
	// DisplayNameApproval (131037): the number needs display name approval
	// before it can send.
	DisplayNameApproval Code = 131037
	// IncorrectCertificate (131045): phone number registration error
	// (incorrect certificate).
	IncorrectCertificate Code = 131045
	// ReEngagement (131047): more than 24 hours have passed since the user
	// last wrote; only a template message can be sent.
	ReEngagement Code = 131047
	// MarketingLimit (131049): Meta chose not to deliver a marketing message
	// to maintain healthy ecosystem engagement. The per-user budget is summed
	// across all businesses, so pacing cannot help; retrying within 24 h
	// extends the block.
	MarketingLimit Code = 131049
	// MarketingStopped (131050): the user stopped marketing messages from
	// this business. Do not retry.
	MarketingStopped Code = 131050
	// UnsupportedMessageType (131051): the message type is not supported.
	UnsupportedMessageType Code = 131051
	// MediaDownload (131052): media sent by the user could not be downloaded.
	MediaDownload Code = 131052
	// MediaUpload (131053): media used in the message could not be uploaded.
	MediaUpload Code = 131053
	// Maintenance (131057): the business account is in maintenance mode, for
	// example during a throughput upgrade (up to about a minute).
	Maintenance Code = 131057
	// BSUIDNotSupported (131062): the message was addressed to a
	// business-scoped user ID (a username user, such as CO.1949266959121697)
	// but this message type cannot be sent to one (authentication templates,
	// for example). Send it to a phone number or choose another type.
	BSUIDNotSupported Code = 131062
	// MarketingTemplatesDisabled (131063): marketing templates are disabled
	// for Cloud API on this WhatsApp Business Account. It holds the whole
	// account, not a recipient; a person must change the account's setup.
	MarketingTemplatesDisabled Code = 131063
	// GenericUserError (135000): generic user error.
	GenericUserError Code = 135000
	// MaintenanceMode (2494100): the business phone number is in maintenance
	// mode (HTTP 503); Meta's remedy is to try again in a few minutes. The
	// answer proves the message was not accepted even at 503.
	MaintenanceMode Code = 2494100
)

// Template and flow errors.
const (
	// TemplateParamCount (132000): the number of parameters does not match
	// the template.
	TemplateParamCount Code = 132000
	// TemplateNotFound (132001): the template does not exist in that language
	// or is not approved.
	TemplateNotFound Code = 132001
	// TemplateTooLong (132005): translated text is too long.
	TemplateTooLong Code = 132005
	// TemplateFormatPolicy (132007): the template's format character policy
	// was violated.
	TemplateFormatPolicy Code = 132007
	// TemplateParamFormat (132012): a parameter's format does not match the
	// template.
	TemplateParamFormat Code = 132012
	// TemplatePaused (132015): the template is paused for low quality.
	TemplatePaused Code = 132015
	// TemplateDisabled (132016): the template was paused too many times and
	// is permanently disabled.
	TemplateDisabled Code = 132016
	// TemplateValidation (132018): template validation error; the template
	// or its parameters failed Meta's validation.
	TemplateValidation Code = 132018
	// FlowBlocked (132068): the flow is in a blocked state.
	FlowBlocked Code = 132068
	// FlowThrottled (132069): the flow is in a throttled state and its hourly
	// allowance of messages is spent.
	FlowThrottled Code = 132069
)

// Marketing Messages API for WhatsApp errors: answers of
// /<PHONE_NUMBER_ID>/marketing_messages on top of Cloud API's codes (Meta's
// Marketing Messages API support page). None of them proves that anything
// was sent.
const (
	// MarketingAPINotAllowed (131055): "Method not allowed", details "Only
	// marketing template messages are supported": a message that is not a
	// template, or a utility or authentication template, was posted to
	// /marketing_messages. Meta: "Try sending again using a marketing
	// template message"; a template the Client routed there by category is
	// re-sent to /messages (see cloudapi).
	MarketingAPINotAllowed Code = 131055
	// MarketingAPITemplateCategory (134100): "Only marketing messages
	// supported", details "You're only able to send marketing messages on
	// this API" (Graph API v23.0 and later): the template is a utility or
	// authentication one, so its latest category is not MARKETING. Meta
	// documents it with 400: nothing was sent, and the message belongs on
	// /messages, where cloudapi's Client re-sends it.
	MarketingAPITemplateCategory Code = 134100
	// MarketingAPITemplateSync (134101): "Your template is still syncing":
	// the template was created too recently (or was dormant for more than 7
	// days) and its ad synchronisation is not complete (v23.0 and later);
	// Meta says to wait 10 minutes.
	MarketingAPITemplateSync Code = 134101
	// MarketingAPINotEligible (134102): "Template unavailable for use": Meta
	// could not complete the template's ad synchronisation, or the account
	// is not eligible for (not onboarded to) the Marketing Messages API.
	// Meta documents it with HTTP 500, yet it names a refusal: the template
	// cannot be used, so nothing was sent ([Class.RefusedOn5xx]). Meta's
	// remedy is to check the account's marketing_messages_lite_api_status
	// and contact support if it is ONBOARDED; a sender that wants Meta to
	// deliver through Cloud API instead leaves product_policy at
	// CLOUD_API_FALLBACK (the default), or sends to /messages.
	MarketingAPINotEligible Code = 134102
	// MarketingAPIDuplicateRequest (1752041): "Duplicate Request": the
	// business customer was already invited to onboard to the Marketing
	// Messages API by a partner (the onboarding intent API takes one
	// request per business). Meta: no further action is required; every
	// eligible account of the business is onboarded. Not a message send.
	MarketingAPIDuplicateRequest Code = 1752041
)

// Template management errors (the Message Templates API and template
// insights), from the error codes page. None concerns a message send.
const (
	// TemplateInsightsUnavailable (200005): template insights are not
	// available yet for this WhatsApp Business Account; they cannot be
	// enabled at the moment.
	TemplateInsightsUnavailable Code = 200005
	// TemplateInsightsPermanent (200006): "Cannot disable template
	// insights": once enabled they stay enabled.
	TemplateInsightsPermanent Code = 200006
	// TemplateInsightsNotEnabled (200007): template insights have not been
	// enabled for this WhatsApp Business Account; enable them first.
	TemplateInsightsNotEnabled Code = 200007
	// TemplateLimitExceeded (2388019): the account already holds the most
	// message templates it may have.
	TemplateLimitExceeded Code = 2388019
	// TemplateCharacterLimit (2388040): a template field is longer than
	// its limit.
	TemplateCharacterLimit Code = 2388040
	// TemplateHeaderFormat (2388047): the template's header is not
	// formatted as required.
	TemplateHeaderFormat Code = 2388047
	// TemplateBodyFormat (2388072): the template's body is not formatted as
	// required.
	TemplateBodyFormat Code = 2388072
	// TemplateFooterFormat (2388073): the template's footer is not
	// formatted as required.
	TemplateFooterFormat Code = 2388073
	// TemplateParamRatio (2388293): too many variables for the template's
	// length.
	TemplateParamRatio Code = 2388293
	// TemplateParamPosition (2388299): a variable at the start or end of
	// the template.
	TemplateParamPosition Code = 2388299
)

// WhatsApp Business Account errors (the deprecated On-Behalf-Of model).
const (
	// WABAMigrationMarked (2593079): the account is already marked for
	// migration to a different solution ID. (Meta's page titles this row
	// "Template insights unavailable", the title of 200005; the title here
	// is its description.)
	WABAMigrationMarked Code = 2593079
	// WABAInvalidForOBOMobility (2593085): the account is not eligible for
	// an On-Behalf-Of ownership transfer.
	WABAInvalidForOBOMobility Code = 2593085
)

// Synchronization errors: POST /<PHONE_NUMBER_ID>/smb_app_data, which
// copies a coexistence number's WhatsApp Business app contacts and message
// history (Meta's "Onboarding business app users"). Neither is retryable:
// Meta's remedy is to offboard the business customer and onboard it again.
const (
	// SyncLimitExceeded (2593107): "Synchronization Request limit
	// exceeded": contacts and history can each be synchronised once per
	// onboarding of the number.
	SyncLimitExceeded Code = 2593107
	// SyncOutsideWindow (2593108): "Synchronization Request made outside
	// of allowed time window": synchronisation can be requested only within
	// 24 hours of onboarding.
	SyncOutsideWindow Code = 2593108
)

// Phone number migration errors (management endpoints).
const (
	// MigrationOwnership (2388001): the certificate of a number being
	// migrated can be downloaded only once its ownership is confirmed; the
	// same code asks for two-step verification to be disabled.
	MigrationOwnership Code = 2388001
	// PhoneNumberExists (2388012): the phone number being migrated already
	// exists in the destination WhatsApp Business Account.
	PhoneNumberExists Code = 2388012
	// MigrationCodeNotEligible (2388091): the number is not being migrated,
	// so it cannot request or verify a migration registration code.
	MigrationCodeNotEligible Code = 2388091
	// MigrationVerifyNotEligible (2388093): as 2388091, for verifying the
	// code.
	MigrationVerifyNotEligible Code = 2388093
	// MigrationNotPossible (2388103): the number cannot be migrated (no
	// webhooks on the destination account, no approved display name, no
	// payment account, an account not approved, another business, or
	// Meta's own error); the details say which.
	MigrationNotPossible Code = 2388103
)

// Registration errors (phone number registration and two-step verification).
const (
	// IncompleteDeregistration (133000): a previous deregistration failed.
	IncompleteDeregistration Code = 133000
	// RegistrationServerUnavailable (133004): server temporarily unavailable.
	RegistrationServerUnavailable Code = 133004
	// PINMismatch (133005): two-step verification PIN mismatch.
	PINMismatch Code = 133005
	// ReverificationNeeded (133006): the phone number must be verified again.
	ReverificationNeeded Code = 133006
	// TooManyPINGuesses (133008): too many two-step verification PIN guesses.
	TooManyPINGuesses Code = 133008
	// PINGuessedTooFast (133009): two-step verification PIN guessed too fast.
	PINGuessedTooFast Code = 133009
	// NotRegistered (133010): the phone number is not registered.
	NotRegistered Code = 133010
	// RegisterWait (133015): wait before registering this recently deleted
	// number again; Meta's page says 5 minutes.
	RegisterWait Code = 133015
)
