package mcptool

import (
	"errors"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/internal/phone"
	"github.com/wapace/wapace/outbox"
)

// ErrInvalidConfig is matched by the error Register returns for a Config it
// cannot use.
var ErrInvalidConfig = errors.New("mcptool: invalid config")

// Config configures the tools. Outbox and From are required; the zero
// values of the other fields mean their defaults.
type Config struct {
	// Outbox stores every message before anything is sent: the tools never
	// send themselves. Run it with the cloudapi.Client that sends (in this
	// process or another one sharing its database): outbox.Run dispatches
	// what the tools enqueue.
	Outbox *outbox.Outbox
	// From lists the business phone number IDs the agent may send from
	// (Meta's numeric IDs); the first is the default. The input schema
	// offers exactly these.
	From []string
	// Client is the client outbox.Run sends with, the owner of every
	// limit (give the outbox the same one: outbox.WithClient). With it, a
	// message is refused at once when a limit the Client knows holds it
	// past its deadline (its pair's debt or 131056 hold, its number's hold
	// after 130429, 131057 or 2494100, the call budget's), naming the code
	// that holds it, and a queued message's estimate counts the wait: the
	// tools ask the Client's own admission query
	// (cloudapi.Client.Admission), of the limits the send will meet.
	// Without it, only the outbox's estimate (its lane's depth) is known.
	// The tools never send through it.
	Client *cloudapi.Client
	// Waker, when its Observe is the outbox's observer, wakes waiting
	// calls at each transition of their message instead of at their next
	// poll.
	Waker *Waker
	// Clock is the clock the tools read and wait on (the real clock by
	// default). Give the Outbox and the Client the same one.
	Clock clock.Clock
	// SyncWait bounds how long a call waits for Meta's answer
	// (DefaultSyncWait, at most MaxSyncWait). A delivery "sync" message
	// that cannot be accepted within it is rejected, never left to be sent
	// later.
	SyncWait time.Duration
	// AcceptWait is how long a delivery "async" call waits for a message
	// that is due now to be accepted before reporting it queued
	// (DefaultAcceptWait).
	AcceptWait time.Duration
	// ReplyTTL is the freshness of a free-form message or a reply sent
	// without a deadline (DefaultReplyTTL).
	ReplyTTL time.Duration
	// PollInterval is how often a waiting call reads the outbox
	// (DefaultPollInterval), with or without a Waker.
	PollInterval time.Duration
}

// MaxSyncWait is the longest SyncWait or AcceptWait: a tool call that
// waits longer outlives the request timeouts of common MCP clients, and a
// wait that cannot be bounded is a hang.
const MaxSyncWait = 2 * time.Minute

// Register adds send_whatsapp_message and get_message_status to s. It
// returns an error matching ErrInvalidConfig if s or cfg.Outbox is nil, if
// cfg.From is empty, repeats a number or holds one that is not a phone
// number ID, or if a duration is negative or a wait exceeds MaxSyncWait.
func Register(s *mcp.Server, cfg Config) error {
	if s == nil || cfg.Outbox == nil {
		return errors.Join(ErrInvalidConfig, errors.New("mcptool: a server and an outbox are required"))
	}
	t, err := newTools(outboxQueue{cfg.Outbox}, cfg)
	if err != nil {
		return err
	}
	return t.register(s)
}

func newTools(q queue, cfg Config) (*tools, error) {
	if len(cfg.From) == 0 {
		return nil, errors.Join(ErrInvalidConfig, errors.New("mcptool: no business number to send from"))
	}
	seen := map[string]bool{}
	for _, f := range cfg.From {
		if seen[f] {
			return nil, errors.Join(ErrInvalidConfig, errors.New("mcptool: repeated business number"))
		}
		if _, err := phone.ParseFrom(f); err != nil {
			return nil, errors.Join(ErrInvalidConfig, errors.New("mcptool: a business number is not a phone number ID"))
		}
		seen[f] = true
	}
	if cfg.SyncWait < 0 || cfg.AcceptWait < 0 || cfg.ReplyTTL < 0 || cfg.PollInterval < 0 {
		return nil, errors.Join(ErrInvalidConfig, errors.New("mcptool: negative duration"))
	}
	if cfg.SyncWait > MaxSyncWait || cfg.AcceptWait > MaxSyncWait {
		return nil, errors.Join(ErrInvalidConfig, errors.New("mcptool: a call may not wait longer than MaxSyncWait"))
	}
	t := &tools{q: q, from: append([]string(nil), cfg.From...), clk: cfg.Clock,
		client: cfg.Client, waker: cfg.Waker, syncWait: cfg.SyncWait, acceptWait: cfg.AcceptWait, replyTTL: cfg.ReplyTTL, poll: cfg.PollInterval}
	if t.clk == nil {
		t.clk = clock.New()
	}
	if t.syncWait == 0 {
		t.syncWait = DefaultSyncWait
	}
	if t.acceptWait == 0 {
		t.acceptWait = DefaultAcceptWait
	}
	if t.replyTTL == 0 {
		t.replyTTL = DefaultReplyTTL
	}
	if t.poll == 0 {
		t.poll = DefaultPollInterval
	}
	return t, nil
}
