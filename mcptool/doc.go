// Package mcptool registers wapace's WhatsApp tools on a Model Context
// Protocol server built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), so that an AI agent can send
// messages that respect Meta's limits and learns precisely what became of
// each one:
//
//	client, _ := cloudapi.New(token) // the owner of every limit
//	wk := new(mcptool.Waker)         // wakes waiting calls at each transition
//	ob, _ := outbox.Open(ctx, "sqlite:outbox.db", outbox.WithClient(client), outbox.WithObserver(wk.Observe))
//	go ob.Run(ctx, client) // the dispatcher
//	err := mcptool.Register(server, mcptool.Config{
//		Outbox: ob, Client: client, Waker: wk, From: []string{phoneNumberID},
//	})
//
// # Tools
//
// send_whatsapp_message takes to (a phone number or a BSUID), one of text,
// template (name, language, category, parameters, or code for a one-time
// code) and buttons, and optionally reply_to, idempotency_key, a freshness
// deadline (max_delay_ms or expires_at, RFC 3339), delivery (sync or async,
// the default) and from (one of Config.From). get_message_status takes
// operation_id or idempotency_key and returns the outbox state (queued,
// sending, accepted, submitted_unknown, delivered, read, failed, expired)
// with every transition's instant and reason. Results carry their fields as
// structured content (SendResult, StatusResult, with inferred output
// schemas) and a one-line summary as text.
//
// # Model
//
// The tools never send themselves: every message is stored in the outbox
// (its idempotency key recorded before anything else can see it) and sent by
// outbox.Run, so one message can never go out by two paths, and a retried
// call with the same idempotency_key returns the first message's state
// without sending again. The decision, made inside the tool:
//
//	arguments malformed (schema, two contents, two deadlines, ...)  protocol error -32602 (invalid params)
//	message invalid (Validate)                           error WHATSAPP_INVALID_MESSAGE   not_submitted
//	deadline already passed                              error WHATSAPP_MESSAGE_EXPIRED   not_submitted
//	outbox or lane full                                  error WHATSAPP_QUEUE_FULL        not_submitted, retryable
//	a known wait passes the deadline (pair debt, number   error WHATSAPP_BACKPRESSURE      not_submitted, retryable, retry_after_ms
//	hold, the lane's depth)
//	service window closed (free-form, 131047)            error WHATSAPP_WINDOW_CLOSED     not_submitted
//	accepted within the wait                             status accepted, message_id
//	async, cannot go now (pair, number or budget busy)   status queued, estimated_send_at, retry_after_ms
//	sync, not accepted within Config.SyncWait            error WHATSAPP_BACKPRESSURE      not_submitted (never sent later)
//	Meta refused it (131026, 131050, 132001, ...)        error WHATSAPP_NOT_DELIVERABLE / INVALID_MESSAGE / SEND_FAILED
//	outcome unknown (reset, timeout, 5xx)                error WHATSAPP_OUTCOME_UNKNOWN   submitted_unknown, never resent
//
// Freshness decides what may wait. A caller's deadline wins; authentication
// codes never wait past cloudapi.AuthenticationTTL whatever the caller asks;
// free-form messages and replies without a deadline get Config.ReplyTTL
// (conversational content goes stale in minutes); other templates wait as
// long as the outbox allows. A sync call caps the message's deadline at the
// end of its wait, so a message the call gave up on is expired by the outbox,
// never sent after the model was told it failed.
//
// # Errors
//
// Business and capacity failures are tool execution errors (IsError set),
// whose structured content always holds code, meta_code (0 when Meta gave
// none), retryable, retry_after_ms and send_state, plus expires_at when the
// message has a deadline, and the operation's identifiers. A queued message
// is never described as sent. Arguments that do not fit the input schema,
// or contradict each other, are protocol errors: the go-sdk's own AddTool
// reports schema violations as tool errors (SEP-1303), so Register infers
// the schemas the same way (jsonschema.For) but validates the arguments
// itself.
//
// # Testing
//
// The package's tests drive the tools through the SDK's client over its
// in-memory transports, on a SQLite outbox dispatched to
// cloudapitest's fake inside a testing/synctest bubble; examples/mcpserver
// is tested as a subprocess over stdio.
package mcptool
