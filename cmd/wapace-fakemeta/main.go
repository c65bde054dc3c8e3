// Command wapace-fakemeta serves cloudapitest's fake WhatsApp Cloud API over
// real HTTP, as a standalone program (as stripe-mock does for Stripe), so
// that several sender processes, or code in other languages, can be tested
// against one fake Meta that enforces the pair rate limit (131056), each
// number's throughput (130429) and, optionally, the messaging tier.
// A message counts when its body arrived: on Linux, at the kernel's receive
// time of its last bytes, so that the fake's own scheduling on a loaded
// machine does not bunch arrivals that came apart (Meta's clock does not
// share the sender's CPU).
//
// Usage:
//
//	wapace-fakemeta [flags]
//
// It listens on -addr (default 127.0.0.1:0, a free loopback port) and
// prints one line, "wapace-fakemeta listening on http://127.0.0.1:PORT", on
// standard output once it accepts connections (also written to -addr-file).
// Give that URL to cloudapi.WithBaseURL. It stops on SIGINT or SIGTERM.
//
// Flags:
//
//	-addr host:port        listen address (default 127.0.0.1:0)
//	-addr-file path        also write the base URL to this file
//	-mps n                 every number's messages per second (default 80)
//	-number-mps id=n       one number's messages per second (repeatable)
//	-tier n                unique template recipients per 24 h (0: no tier)
//	-tier-code code        the code a tier refusal answers (default 131064)
//	-fail code[@to]        answer the next request (to recipient to) with a
//	                       Graph error code; "reset" or "hang" instead of a
//	                       code drop the connection or never answer (repeatable)
//	-maintenance id=dur    number id answers 131057 for dur from start (repeatable)
//	-token t               accept only "Authorization: Bearer t"
//	-app-secret s          sign webhooks with s (X-Hub-Signature-256)
//	-webhook url           post a signed "sent" status webhook for every
//	                       accepted message to url
//	-pair-interval d       pair rule: one message per d to a recipient (6s)
//	-pair-burst n          pair rule: most messages in a burst (45)
//	-pair-window d         pair rule: a burst accepts more for d after its
//	                       first message (6s)
//	-template n:lang:CAT   a known template in category CAT (MARKETING,
//	                       UTILITY, AUTHENTICATION), listed at
//	                       GET /{version}/{waba-id}/message_templates; with
//	                       any, an unknown name is refused with 132001 and a
//	                       non-marketing one at /marketing_messages with
//	                       134100 (repeatable)
//
// # Inspection
//
// GET /_fake/stats answers JSON: the requests received, the messages
// accepted, refusals by error code, the accepted count per idempotency key
// (biz_opaque_callback_data) and the duplicates (accepted messages beyond the
// first per key). GET /_fake/requests lists every request with its answer.
// POST /_fake/fail with {"code":131056,"to":"...","reset":false,"hang":false}
// scripts one more failure at run time. POST /_fake/recategorize with
// {"waba_id":"...","name":"...","language":"en_US","category":"MARKETING"}
// changes a -template's category and posts the signed completed
// template_category_update to -webhook. Webhook deliveries that failed are
// counted in the stats. Messages are served at both
// /{version}/{phone-number-id}/messages and /marketing_messages, which share
// the pair rule and the number's throughput.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/wapace/wapace/internal/program/fakemeta"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := fakemeta.Run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "wapace-fakemeta:", err)
		os.Exit(1)
	}
}
