// Package wapace is the root of a module that keeps WhatsApp Business Cloud
// API senders inside Meta's limits, in one process or shared by several on
// Redis, retries the way Meta prescribes, never sends a message twice, stores
// messages durably before sending them, and can be tested on simulated time.
// The root package holds no code; import the packages below.
//
// Meta enforces several independent limits at once:
//
//   - Pair rate limit (error 131056): one business number may send 1 message
//     every 6 s to one WhatsApp user (a phone number or a business-scoped
//     user ID); a burst of up to 45 is accepted but borrows from future
//     quota, so the pair must then stay silent for about n x 6 s. Other
//     recipients are never affected.
//   - Throughput (error 130429): per business phone number, 80 messages/s by
//     default, up to 1,000 after upgrade, 20 for coexistence numbers.
//   - Messaging tiers: unique recipients reached outside the customer service
//     window in a rolling 24 h, per business portfolio (250 up to unlimited).
//   - API call budget (errors 4, 613, 80007 and 80008): requests per app and
//     per WABA to the management endpoints (not /messages).
//
// The packages:
//
//   - errcodes: classify every Cloud API error code (scope, hold, retryable,
//     whether the message may exist).
//   - backoff: Meta's 4^X schedule and others, and a retry helper that waits
//     on an injected clock.
//   - pairlimit: the keyed pacer for the pair rate limit, with burst debt;
//     pairlimit/pairlimittest is the conformance kit for its stores.
//   - throughput: per-number rate, messaging tiers and the API call budget;
//     throughput/throughputtest is the conformance kit for its stores.
//   - cloudapi: a thin Cloud API client wiring them together, with one
//     outcome per message; cloudapi/webhook receives what Meta posts back
//     (inbound messages, statuses, limit changes); cloudapi/cloudapitest is
//     a fake Meta for tests.
//   - outbox: a durable send queue on SQLite or Postgres, FIFO per
//     recipient, that queues or rejects at once and records every state.
//   - redisstore: the limits' state in Redis, so that several processes
//     pace as one.
//   - mcptool: Model Context Protocol tools that let an AI agent send
//     through the outbox and read each message's state.
//   - simclock: a discrete-event clock on which a whole campaign runs in
//     seconds with exact instants.
//
// Commands: cmd/wapace-fakemeta serves the fake Meta on loopback;
// examples/campaign, multibubble, retry, forensics, backpressure, workers
// and mcpserver are runnable scenarios. The internal packages (phone,
// clockwait, clocktest, fakemeta, redisserver, redistest, and the
// examples' rawsend) are not importable from outside the module.
package wapace
