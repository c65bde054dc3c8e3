package cloudapi

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/wapace/wapace/backoff"
	"github.com/wapace/wapace/internal/instant"
	"github.com/wapace/wapace/internal/phone"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/throughput"
)

// Defaults of a Client.
const (
	// DefaultBaseURL is Meta's Graph API host.
	DefaultBaseURL = "https://graph.facebook.com"
	// DefaultAPIVersion is the Graph API version requests name unless
	// WithAPIVersion says otherwise: the newest stable version in Meta's
	// Graph API changelog (v26.0, July 2026). Pin a version with
	// WithAPIVersion to upgrade on your own schedule.
	DefaultAPIVersion = "v26.0"
	// DefaultTimeout bounds one request unless the *http.Client given to
	// WithHTTPClient sets its own Timeout.
	DefaultTimeout = 30 * time.Second
)

// idleConnsPerHost is how many idle connections to one host the Client's
// own transport keeps (without WithHTTPClient). net/http's default
// transport keeps 2: a sender with more requests in flight over HTTP/1.1
// would dial a new connection for most of them. It is at least
// outbox.DefaultConcurrency: an outbox's Run may write that many at once
// after a pause, and each connection closed for want of room in the pool
// is dialled again for the next burst (and left in TIME_WAIT). Idle
// connections close after the transport's IdleConnTimeout (90 s).
const idleConnsPerHost = 1024

// defaultTransport is the transport of Clients made without
// WithHTTPClient, shared by them as http.DefaultTransport is: net/http's
// default transport (proxy from the environment, HTTP/2 when the server
// offers it, its timeouts) keeping idleConnsPerHost idle connections per
// host, asking for no compression, whose connections send each request's
// headers with its body (transport.go).
var defaultTransport = sync.OnceValue(func() http.RoundTripper {
	tr, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport // replaced by the program: keep its choice
	}
	tr = tr.Clone()
	tr.MaxIdleConnsPerHost = idleConnsPerHost
	tr.MaxIdleConns = max(tr.MaxIdleConns, 2*idleConnsPerHost)
	// Meta's answers are a few hundred bytes: not worth a gzip reader
	// and an extra header on every request.
	tr.DisableCompression = true
	if tr.DialContext != nil {
		tr.DialContext = coalesceDial(tr.DialContext)
	}
	return tr
})

// ErrInvalidOption is matched by the error New returns for a bad option.
var ErrInvalidOption = errors.New("cloudapi: invalid option")

// Client sends messages through the Cloud API within Meta's limits: the
// pair rate limit (pairlimit), each business number's throughput and the
// app's call budget (throughput), and optionally the portfolio's messaging
// tier. It is safe for concurrent use by multiple goroutines; concurrent
// sends share the limits. It starts no goroutine.
type Client struct {
	token      *credential // behind a pointer: printing a Client value shows an address
	baseURL    string      // without a trailing slash
	version    string
	hc         *http.Client
	clock      clock.Clock
	log        *slog.Logger
	observer   func(Event)
	hooks      Hooks // WithHooks, or nil
	pairs      *pairlimit.Limiter
	tier       *throughput.Tier
	budget     *throughput.Budget
	schedule   backoff.Schedule
	attempts   int
	defaultMPS int
	mpsFor     map[string]int
	tpOpts     []throughput.Option
	store      Store  // with WithStore: where the limits the Client builds keep their state
	salt       []byte // keys the pair pseudonyms in logs
	newKey     func() string
	idemKeys   int
	idemAge    time.Duration
	idem       *idemMemory
	wabaID     string             // with WithTemplateCategories: the account of the Client's numbers
	categories TemplateCategories // with WithTemplateCategories: where templates' categories are read

	mu      sync.Mutex                     // protects numbers
	numbers map[string]*throughput.Limiter // by phone number ID

	numberHolds sync.Map // phone number ID -> the errcodes.Code of its latest hold, for Admission
}

// credential holds the access token, and the Authorization header that
// carries it.
type credential struct{ token, header string }

// Option configures a Client. Options are validated by New: a nil value or
// an out-of-range number is an error matching ErrInvalidOption.
type Option func(*Client) error

var versionRE = regexp.MustCompile(`^v[0-9]{1,3}\.[0-9]{1,3}$`)

// WithBaseURL sends requests to base (default DefaultBaseURL), for example
// a cloudapitest server's URL. It must be an absolute http or https URL.
func WithBaseURL(base string) Option {
	return func(c *Client) error {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("%w: base URL must be an absolute http or https URL", ErrInvalidOption)
		}
		c.baseURL = strings.TrimRight(u.String(), "/")
		return nil
	}
}

// WithAPIVersion names the Graph API version, such as "v26.0" (default
// DefaultAPIVersion). Pin it to upgrade on your own schedule.
func WithAPIVersion(v string) Option {
	return func(c *Client) error {
		if !versionRE.MatchString(v) {
			return fmt.Errorf("%w: API version must look like v26.0", ErrInvalidOption)
		}
		c.version = v
		return nil
	}
}

// WithHTTPClient makes requests with a copy of hc; hc itself is never
// changed. Every request stays bounded: if hc has no Timeout, the copy gets
// DefaultTimeout (give hc a Timeout of your own to change it). Without
// it, the Client uses a clone of net/http's default transport keeping 1,024
// idle connections per host, asking for no compression, and writing each
// request's headers with its body; a transport of your
// own should keep about as many as you have requests in flight
// (http.Transport.MaxIdleConnsPerHost: its default, 2, makes most
// requests dial).
//
// The Client lets one body of a request go to the transport and refuses
// the request's GetBody after that (the attempt then ends
// ErrSubmittedUnknown), which keeps net/http's own retries from sending a
// message twice. It cannot tell a transport's copy that goes to Meta from
// one it only reads (to log or route the request): a transport that takes
// two bodies before either goes and sends both (hedged requests) sends
// the message twice, and one that holds a body it has read past the
// outbox's lease fence writes it late (see outbox.WithLease).
//
// Without a Store the Client counts each write from the transport's
// httptrace report (WroteRequest) of the request's context. A transport
// that makes its own request on a context without that trace (a wrapper
// that drops the request's context) is counted from the end of the
// request instead, which is safe but slow: each write then holds its
// place for a second and the whole round trip, and the number sends at
// its figure divided by 1 s + the round trip (80 msg/s at a 300 ms round
// trip: 78 % of the figure, and most requests ended once in the check).
// Pass the request's context through.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return fmt.Errorf("%w: nil *http.Client", ErrInvalidOption)
		}
		cp := *hc
		if cp.Timeout <= 0 {
			cp.Timeout = DefaultTimeout
		}
		c.hc = &cp
		return nil
	}
}

// WithClock makes the Client, and the limiters it builds itself, read time
// from and wait on clk (the real clock by default). Limiters passed with
// WithPairLimiter, WithTier or WithBudget keep their own clocks: give them
// the same one.
func WithClock(clk clock.Clock) Option {
	return func(c *Client) error {
		if clk == nil {
			return fmt.Errorf("%w: nil clock", ErrInvalidOption)
		}
		c.clock = clk
		return nil
	}
}

// WithLogger logs every attempt to l (nothing is logged by default): the
// instant, the business number, the recipient masked and a per-client
// pseudonym of the pair, the wamid, Meta's code, the attempt and the wait.
// Tokens never appear.
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.log = l
		return nil
	}
}

// WithObserver calls f with every attempt's Event, for metrics. f must not
// block.
func WithObserver(f func(Event)) Option {
	return func(c *Client) error {
		if f == nil {
			return fmt.Errorf("%w: nil observer", ErrInvalidOption)
		}
		c.observer = f
		return nil
	}
}

// WithPairLimiter paces pairs with l instead of a limiter the Client builds
// with pairlimit.Meta. Share one limiter between clients that send on the
// same numbers.
func WithPairLimiter(l *pairlimit.Limiter) Option {
	return func(c *Client) error {
		if l == nil {
			return fmt.Errorf("%w: nil pair limiter", ErrInvalidOption)
		}
		c.pairs = l
		return nil
	}
}

// WithThroughput sets the messages per second of every business number
// (default throughput.Default, 80), and options for their limiters such as
// throughput.WithHeadroom.
func WithThroughput(mps int, opts ...throughput.Option) Option {
	return func(c *Client) error {
		if mps < 1 {
			return fmt.Errorf("%w: throughput must be at least 1 message per second", ErrInvalidOption)
		}
		if err := checkThroughput(mps, opts); err != nil {
			return err
		}
		c.defaultMPS = mps
		c.tpOpts = opts
		return nil
	}
}

// checkThroughput reports, as an error matching ErrInvalidOption, a
// figure or an option the number's throughput.Limiter would refuse
// (throughput.ErrInvalidOption): a throwaway limiter's ReserveN of 0
// messages checks its configuration and spends nothing.
func checkThroughput(mps int, opts []throughput.Option) error {
	if err := throughput.New(mps, opts...).ReserveN(time.Time{}, 0).Err(); errors.Is(err, throughput.ErrInvalidOption) {
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return nil
}

// WithNumberThroughput sets the throughput of one business number, such as
// throughput.Upgraded or throughput.Coexistence.
func WithNumberThroughput(phoneNumberID string, mps int) Option {
	return func(c *Client) error {
		if mps < 1 {
			return fmt.Errorf("%w: throughput must be at least 1 message per second", ErrInvalidOption)
		}
		if _, err := phone.ParseFrom(phoneNumberID); err != nil {
			return fmt.Errorf("%w: phone number ID must be digits", ErrInvalidOption)
		}
		if err := checkThroughput(mps, nil); err != nil {
			return err
		}
		c.mpsFor[phoneNumberID] = mps
		return nil
	}
}

// WithTier admits business-initiated templates against t, the messaging
// tier of the portfolio (shared by its numbers). Without it, no tier check
// is made.
func WithTier(t *throughput.Tier) Option {
	return func(c *Client) error {
		if t == nil {
			return fmt.Errorf("%w: nil tier", ErrInvalidOption)
		}
		c.tier = t
		return nil
	}
}

// WithBudget shares b, the app's call budget against the WABA, with the
// Client: sends wait while Meta's refusal of a call (4, 613, 80007 or
// 80008) holds it (b.RefusedUntil); a usage header about management calls
// is fed to b but never holds a send. The default is a budget of 5,000
// calls an hour, Meta's figure for a WABA with a registered number.
func WithBudget(b *throughput.Budget) Option {
	return func(c *Client) error {
		if b == nil {
			return fmt.Errorf("%w: nil budget", ErrInvalidOption)
		}
		c.budget = b
		return nil
	}
}

// WithRetry sets the least wait before a refused message is retried (the
// limits' own holds may make it longer) and the most requests made for one
// message. The defaults are backoff.Meta and 6 attempts (with Meta's 4^X
// schedule the waits between them add up to 341 s).
func WithRetry(s backoff.Schedule, maxAttempts int) Option {
	return func(c *Client) error {
		if s == nil || maxAttempts < 1 {
			return fmt.Errorf("%w: retry needs a schedule and at least 1 attempt", ErrInvalidOption)
		}
		c.schedule, c.attempts = s, maxAttempts
		return nil
	}
}

// WithIdempotencyKeys generates the keys of messages that have none with
// f (default: 16 random bytes in hex).
func WithIdempotencyKeys(f func() string) Option {
	return func(c *Client) error {
		if f == nil {
			return fmt.Errorf("%w: nil key generator", ErrInvalidOption)
		}
		c.newKey = f
		return nil
	}
}

// WithIdempotencyMemory bounds how many idempotency keys the Client
// remembers (default 100,000) and for how long (default 24 hours). Only keys
// the caller set in Message.IdempotencyKey are remembered; a send whose key
// is remembered makes no request and fails with ErrDuplicate. Memory stays
// below about keys x 1 KiB (a key is at most 512 bytes). Keys are forgotten
// oldest first, but never while their send is in flight (a retry could then
// be sent twice): a send that finds the keys of sends in flight filling the memory
// fails at once with ErrIdempotencyMemoryFull, sending nothing, so keep
// keys above the sends you keep in flight at once. The memory is per
// Client and lost with it (a durable queue remembers for longer).
func WithIdempotencyMemory(keys int, age time.Duration) Option {
	return func(c *Client) error {
		if keys < 1 || age <= 0 {
			return fmt.Errorf("%w: idempotency memory needs at least 1 key and a positive age", ErrInvalidOption)
		}
		c.idemKeys, c.idemAge = keys, age
		return nil
	}
}

// New returns a Client that authenticates with token (a system user or
// business access token). The token travels only in the Authorization
// header and never appears in an error or a log line.
func New(token string, opts ...Option) (*Client, error) {
	if token == "" {
		return nil, fmt.Errorf("%w: empty access token", ErrInvalidOption)
	}
	for _, r := range token {
		if r <= ' ' || r == 0x7f {
			return nil, fmt.Errorf("%w: access token contains white space or control characters", ErrInvalidOption)
		}
	}
	c := &Client{
		token:      &credential{token, "Bearer " + token},
		baseURL:    DefaultBaseURL,
		version:    DefaultAPIVersion,
		hc:         &http.Client{Timeout: DefaultTimeout, Transport: defaultTransport()},
		clock:      clock.New(),
		log:        slog.New(slog.DiscardHandler),
		schedule:   backoff.Meta,
		attempts:   6, // backoff.Retry's default: one try and five retries
		defaultMPS: throughput.Default,
		mpsFor:     map[string]int{},
		newKey:     randomKey,
		numbers:    map[string]*throughput.Limiter{},
		idemKeys:   defaultIdempotencyKeys,
		idemAge:    defaultIdempotencyAge,
	}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.pairs == nil {
		c.pairs = pairlimit.New(pairlimit.Meta, c.pairOptions()...)
	}
	if c.budget == nil {
		c.budget = throughput.NewBudget(5_000, c.budgetOptions()...) // Meta: a WABA with a registered number
	}
	c.idem = newIdemMemory(c.idemKeys, c.idemAge)
	c.idem.sc = instant.Of(c.clock.Now())
	c.salt = make([]byte, 16)
	_, _ = rand.Read(c.salt)
	return c, nil
}

// Number returns the throughput limiter of business number phoneNumberID,
// creating it on first use, so that callers can change its rate after an
// upgrade (SetMPSAt: the sends waiting for their slots then go at the new
// figure's pace) or inspect its holds. A caller that reserves on it
// directly reads each reservation's TimeToAct just before it sends: a
// change of figure moves the slots still waiting. With a Store shared by
// several processes (WithStore) slots cannot move: a cut makes the sends
// waiting in this process take new slots at the new figure, behind those
// handed out, and a process not told keeps its pace (see
// throughput.Limiter.SetMPSAt).
//
// Without a Store the Client counts the number's writes (see the package
// doc): a late send keeps its slot while the last second of writes has
// room, and the limiter's Margin is 0. That count holds only the Client's
// own writes: traffic sent on the limiter's reservations outside the
// Client is not in it, so give the number a headroom for such traffic
// (WithThroughput with throughput.WithHeadroom).
//
// On a Client not made by New it returns a new limiter at the default rate,
// tied to nothing.
func (c *Client) Number(phoneNumberID string) *throughput.Limiter {
	if c.usable(context.Background()) != nil {
		return throughput.New(throughput.Default)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.numbers[phoneNumberID]
	if !ok {
		mps, ok := c.mpsFor[phoneNumberID]
		if !ok {
			mps = c.defaultMPS
		}
		l = throughput.New(mps, c.numberOptions(phoneNumberID)...)
		c.numbers[phoneNumberID] = l
	}
	return l
}

// PairLimiter returns the Client's pair limiter: the one given to
// WithPairLimiter, or the one New built (pairlimit.Meta, over WithStore's
// store if any). An outbox replays its recent sends into it and reads its
// policy for its estimates, so that the limits are set once, on the
// Client.
//
// On a Client not made by New it returns a new limiter with pairlimit.Meta,
// tied to nothing.
func (c *Client) PairLimiter() *pairlimit.Limiter {
	if c.usable(context.Background()) != nil {
		return pairlimit.New(pairlimit.Meta)
	}
	return c.pairs
}

// String describes the client without its token, so that printing a
// Client (with %v, %+v or %s) never reveals it.
func (c *Client) String() string {
	if c == nil {
		return "cloudapi.Client(nil)"
	}
	return "cloudapi.Client{base: " + c.baseURL + ", version: " + c.version + ", token: [redacted]}"
}

// GoString is String, for %#v.
func (c *Client) GoString() string { return c.String() }

// usable returns ErrZeroClient for a Client not made by New, and an error
// for a nil ctx: the checks every exported method makes before anything
// else.
func (c *Client) usable(ctx context.Context) error {
	if c == nil || c.idem == nil {
		return ErrZeroClient
	}
	if ctx == nil {
		return invalid("ctx", "nil Context")
	}
	return nil
}

func randomKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// pseudonym names a pair in logs without revealing the recipient: stable
// for one Client, unlinkable across clients.
func (c *Client) pseudonym(p pairlimit.Pair) string {
	m := hmac.New(sha256.New, c.salt)
	m.Write([]byte(p.From() + ">" + p.To()))
	return hex.EncodeToString(m.Sum(nil)[:6])
}
