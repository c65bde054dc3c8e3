// Package fakemeta is the program behind cmd/wapace-fakemeta (and the
// fake Meta of examples/workers): cloudapitest's fake served over real HTTP
// with an inspection endpoint and signed webhooks. See the command's
// documentation for its flags.
package fakemeta

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wapace/wapace/cloudapi/cloudapitest"
	"github.com/wapace/wapace/errcodes"
)

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
	pairInterval     time.Duration
	pairBurst        int
	pairWindow       time.Duration
	templates        [][3]string // name, language, category
}

// multi is a repeatable flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("wapace-fakemeta", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var numberMPS, fails, maint, templates multi
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
	fs.DurationVar(&c.pairInterval, "pair-interval", 6*time.Second, "pair rule: one message per interval to a recipient")
	fs.IntVar(&c.pairBurst, "pair-burst", 45, "pair rule: the most messages in one burst")
	fs.Var(&templates, "template", "a known template, name:language:CATEGORY (repeatable; without any, every name is accepted)")
	fs.DurationVar(&c.pairWindow, "pair-window", 6*time.Second, "pair rule: how long after its first message a burst accepts more")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if c.mps < 1 {
		return c, errors.New("-mps must be at least 1")
	}
	if c.tierCode <= 0 {
		return c, errors.New("-tier-code must be a Graph error code (positive)")
	}
	if c.pairInterval <= 0 || c.pairBurst < 1 || c.pairWindow <= 0 {
		return c, errors.New("-pair-interval, -pair-burst and -pair-window must be positive")
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
	for _, v := range templates {
		parts := strings.Split(v, ":")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return c, fmt.Errorf("-template %q: want name:language:CATEGORY", v)
		}
		c.templates = append(c.templates, [3]string{parts[0], parts[1], strings.ToUpper(parts[2])})
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

// Run parses args as the command's flags and serves until ctx is done.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	ln = stampListener(ln)
	srv := &http.Server{Handler: app, ReadHeaderTimeout: 10 * time.Second, ConnContext: withConn}
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
