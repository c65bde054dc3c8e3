// Package wapace is the root of a module that keeps WhatsApp Business Cloud
// API senders inside Meta's limits, retries the way Meta prescribes and can be
// tested on simulated time. The root package holds no code; import the
// packages below.
//
// Meta enforces several independent limits at once:
//
//   - Pair rate limit (error 131056): one business number may send 1 message
//     every 6 s to one WhatsApp user; a burst of up to 45 is accepted but
//     borrows from future quota, so the pair must then stay silent for about
//     n x 6 s. Other recipients are never affected.
//   - Throughput (error 130429): per business phone number, 80 messages/s by
//     default, up to 1,000 after upgrade, 20 for coexistence numbers.
//   - Messaging tiers: unique recipients reached outside the customer service
//     window in a rolling 24 h, per business portfolio (250 up to unlimited).
//   - API call budget (errors 4 and 80007): requests per app and per WABA.
//
// The packages:
//
//   - errcodes: classify every Cloud API error code (scope, retryable).
//   - backoff: Meta's 4^X schedule and others, and a retry helper that waits
//     on an injected clock.
//   - pairlimit: the keyed pacer for the pair rate limit, with burst debt.
//   - throughput: per-number rate, messaging tiers and the API call budget.
//   - cloudapi: a thin Cloud API client wiring them together;
//     cloudapi/webhook receives what Meta posts back (inbound messages,
//     statuses, limit changes); cloudapi/cloudapitest is a fake Meta for
//     tests.
package wapace
