// Command wapace-fakemeta serves cloudapitest's fake WhatsApp Cloud API over
// real HTTP, as a standalone program (as stripe-mock does for Stripe), so
// that several sender processes, or code in other languages, can be tested
// against one fake Meta that enforces the pair rate limit (131056), each
// number's throughput (130429) and, optionally, the messaging tier.
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
//
// # Inspection
//
// GET /_fake/stats answers JSON: the requests received, the messages
// accepted, refusals by error code, the accepted count per idempotency key
// (biz_opaque_callback_data) and the duplicates (accepted messages beyond the
// first per key). GET /_fake/requests lists every request with its answer.
// POST /_fake/fail with {"code":131056,"to":"...","reset":false,"hang":false}
// scripts one more failure at run time. Webhook deliveries that failed are
// counted in the stats.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "wapace-fakemeta:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	addr, addrFile   string
	mps              int
	numberMPS        map[string]int
	tier             int
	tierCode         int
	failures         []cloudapitest.Failure
	maintenance      map[string]time.Duration
	token, appSecret string
	webhook          string
}

// multi is a repeatable flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("wapace-fakemeta", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var numberMPS, fails, maint multi
	fs.StringVar(&c.addr, "addr", "127.0.0.1:0", "listen address")
	fs.StringVar(&c.addrFile, "addr-file", "", "also write the base URL to this file")
	fs.IntVar(&c.mps, "mps", 80, "every number's messages per second")
	fs.Var(&numberMPS, "number-mps", "one number's messages per second, id=n (repeatable)")
	fs.IntVar(&c.tier, "tier", 0, "unique template recipients per 24 h (0: no tier)")
	fs.IntVar(&c.tierCode, "tier-code", int(errcodes.BusinessRateLimit), "code answered for a tier refusal")
	fs.Var(&fails, "fail", "scripted failure: code[@to], reset[@to] or hang[@to] (repeatable)")
	fs.Var(&maint, "maintenance", "number in maintenance from start: id=duration (repeatable)")
	fs.StringVar(&c.token, "token", "", "accept only this bearer token")
	fs.StringVar(&c.appSecret, "app-secret", "", "app secret webhooks are signed with")
	fs.StringVar(&c.webhook, "webhook", "", "post a signed status webhook per accepted message to this URL")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if c.mps < 1 {
		return c, errors.New("-mps must be at least 1")
	}
	c.numberMPS = map[string]int{}
	for _, v := range numberMPS {
		id, n, ok := strings.Cut(v, "=")
		mps, err := strconv.Atoi(n)
		if !ok || !allDigits(id) || err != nil || mps < 1 {
			return c, fmt.Errorf("-number-mps %q: want id=n with n >= 1", v)
		}
		c.numberMPS[id] = mps
	}
	for _, v := range fails {
		f, err := parseFailure(v)
		if err != nil {
			return c, err
		}
		c.failures = append(c.failures, f)
	}
	c.maintenance = map[string]time.Duration{}
	for _, v := range maint {
		id, d, ok := strings.Cut(v, "=")
		dur, err := time.ParseDuration(d)
		if !ok || !allDigits(id) || err != nil || dur <= 0 {
			return c, fmt.Errorf("-maintenance %q: want id=duration", v)
		}
		c.maintenance[id] = dur
	}
	if c.webhook != "" && !strings.HasPrefix(c.webhook, "http://") && !strings.HasPrefix(c.webhook, "https://") {
		return c, errors.New("-webhook must be an http or https URL")
	}
	return c, nil
}

func parseFailure(v string) (cloudapitest.Failure, error) {
	what, to, _ := strings.Cut(v, "@")
	f := cloudapitest.Failure{To: to}
	switch what {
	case "reset":
		f.Reset = true
	case "hang":
		f.Hang = true
	default:
		code, err := strconv.Atoi(what)
		if err != nil || code <= 0 {
			return f, fmt.Errorf("-fail %q: want a Graph error code, reset or hang, optionally @recipient", v)
		}
		f.Code = errcodes.Code(code)
	}
	return f, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// run serves until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	app := newApp(c)
	defer app.close()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: app, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if c.addrFile != "" {
		if err := os.WriteFile(c.addrFile, []byte(url+"\n"), 0o600); err != nil {
			_ = srv.Close()
			return err
		}
	}
	fmt.Fprintln(stdout, "wapace-fakemeta listening on", url)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	return nil
}
