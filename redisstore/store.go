package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// DefaultPrefix starts every key the Store writes unless WithPrefix says
// otherwise.
const DefaultPrefix = "wapace:"

// ErrUnavailable is matched (with errors.Is) by every error a Store returns
// because Redis could not be asked or did not answer: the message must not
// be sent on it. Usually nothing was reserved; but when the script ran and
// its answer was lost (a read timeout, a connection cut after the write),
// Redis may keep a reservation nobody holds. That errs on the safe side:
// the pair or number waits longer than it needed, never less.
var ErrUnavailable = errors.New("redisstore: redis unavailable")

// UnavailableError reports a decision that could not be made because Redis
// failed (a connection error, a timeout, the context ending, a script
// error). Nothing was sent on it: a message refused this way is not
// submitted and may be sent again later.
//
//	var ue *redisstore.UnavailableError
//	if errors.As(err, &ue) { log.Print(ue.Op, ue.Err) }
type UnavailableError struct {
	// Op names the decision, such as "pair reserve".
	Op string
	// Err is go-redis's error.
	Err error
}

// Error names the decision and the cause.
func (e *UnavailableError) Error() string {
	return "redisstore: " + e.Op + ": not submitted: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Option configures a Store.
type Option func(*Store)

// WithPrefix starts every key with prefix (default DefaultPrefix), so that
// several applications, or tests, can share one Redis.
func WithPrefix(prefix string) Option {
	return func(s *Store) { s.prefix = prefix }
}

// WithTimeout bounds each decision by d when the caller's context has no
// earlier deadline. A decision that takes longer fails with ErrUnavailable.
//
// go-redis applies a context's deadline to the connection only when the
// client's Options.ContextTimeoutEnabled is true: on a client without it,
// neither d nor the caller's context bounds a decision against a server
// that stops answering, and each waits for the client's ReadTimeout (5 s
// by default in go-redis v9). Set ContextTimeoutEnabled on the client for
// d and contexts to apply, or set its ReadTimeout and WriteTimeout to bound
// every decision at no extra cost.
func WithTimeout(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.timeout = d
		}
	}
}

// Store keeps wapace's limits in Redis so that senders in several
// processes share them: per-pair debt and 131056 holds, each business
// number's throughput bucket and holds, the app's call budget and the
// portfolio's messaging tier. Every decision is one Lua script, run by its
// SHA1 (loaded once; EVALSHA falls back to EVAL when the server lost it).
//
// A Store is safe for concurrent use by multiple goroutines. Besides the
// client it holds only what survives a loss of Redis's state (see
// StateLoss): the epoch marker it last saw per number and a bounded shadow
// of the debts its own reservations left, a floor for its own decisions.
// Any number of Stores over one Redis pace as one.
type Store struct {
	rdb     redis.UniversalClient
	prefix  string
	timeout time.Duration
	local   pairstore.Store       // with WithLocalFallback: decides while Redis is down
	localTP throughputstore.Store // the same for the throughput limits

	// Surviving a loss of Redis's state (loss.go).
	shadow      shadow        // the debts this Store's own reservations left
	markers     markers       // the epoch marker last seen per number
	lostDebt    time.Duration // how long unseen pairs owe after a loss
	lostDebtArg any           // lostDebt as a script argument, boxed once
	observe     func(StateLoss)
	log         *slog.Logger

	// pause, set by tests, runs between the shadow's step and the script:
	// in Reserve ("reserve") and in Cancel ("cancel", unless declined).
	pause func(op string, p pairlimit.Pair)
}

// New returns a Store over rdb (a *redis.Client, *redis.ClusterClient or
// *redis.Ring: any redis.UniversalClient).
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, prefix: DefaultPrefix, lostDebt: DefaultLostStateDebt}
	for _, o := range opts {
		o(s)
	}
	s.lostDebtArg = int64(s.lostDebt)
	return s
}

// Prefix returns the prefix of the Store's keys.
func (s *Store) Prefix() string { return s.prefix }

// Key layout. Every key of one business number carries the number as a
// hash tag, so that in Redis Cluster all of a number's keys live in one
// slot.
//
//	{prefix}{N}:p:R   hash: pair (number N, recipient key R)
//	{prefix}{N}:n     hash: number N's throughput bucket
//	{prefix}{b:B}     hash: budget B
//	{prefix}{t:T}:z   sorted set, {prefix}{t:T}:e hash: tier T
//
// run runs script with the Store's timeout and maps failures to
// *UnavailableError.
func (s *Store) run(ctx context.Context, op string, sc *redis.Script, keys []string, args ...any) (any, error) {
	ctx, cancel := s.bound(ctx)
	if cancel != nil {
		defer cancel()
	}
	v, err := sc.Run(ctx, s.rdb, keys, args...).Result()
	if err != nil {
		return nil, &UnavailableError{Op: op, Err: err}
	}
	return v, nil
}

// bound returns ctx bounded by the Store's timeout, and the CancelFunc to
// call when it made a new context.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	if s.timeout > 0 {
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > s.timeout {
			return context.WithTimeout(ctx, s.timeout)
		}
	}
	return ctx, nil
}

// hotScript is a script run on the hot path by runKey, with its hash and
// source boxed once.
type hotScript struct {
	sha, src any
}

func newHotScript(sc *redis.Script, src string) hotScript {
	return hotScript{sha: sc.Hash(), src: src}
}

// Boxed once: the first words of every EVALSHA of one key.
var (
	evalshaArg any = "evalsha"
	evalArg    any = "eval"
)

// Boxed once: the key count of a script on a key and its epoch marker.
var twoKeysArg any = 2

// runKeys is run for a hotScript on nkeys keys (boxed): cmd is its whole
// command, with its first places (EVALSHA, the hash, the key count) filled
// in here, then the keys and arguments, so that a decision builds one
// argument list rather than three (go-redis's Script.Run copies keys and
// arguments into a list of its own). Like Script.Run it sends EVALSHA,
// then EVAL when the server lost the script.
func (s *Store) runKeys(ctx context.Context, op string, sc hotScript, nkeys any, cmd []any) (any, error) {
	ctx, cancel := s.bound(ctx)
	if cancel != nil {
		defer cancel()
	}
	cmd[0], cmd[1], cmd[2] = evalshaArg, sc.sha, nkeys
	c := redis.NewCmd(ctx, cmd...)
	c.SetFirstKeyPos(3)
	err := s.rdb.Process(ctx, c)
	if err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")) {
		cmd[0], cmd[1] = evalArg, sc.src
		c = redis.NewCmd(ctx, cmd...)
		c.SetFirstKeyPos(3)
		err = s.rdb.Process(ctx, c)
	}
	if err != nil {
		return nil, &UnavailableError{Op: op, Err: err}
	}
	return c.Val(), nil
}

// runRO is run for scripts that only read. It uses EVALSHA, not
// EVALSHA_RO, so that servers before Redis 7 run it too.
func (s *Store) runRO(ctx context.Context, op string, sc *redis.Script, keys []string, args ...any) (any, error) {
	ctx, cancel := s.bound(ctx)
	if cancel != nil {
		defer cancel()
	}
	v, err := sc.Run(ctx, s.rdb, keys, args...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, &UnavailableError{Op: op, Err: err}
	}
	return v, nil
}

// reply helpers: a script answers an array of integers and strings.
func replyArray(v any) []any {
	a, _ := v.([]any)
	return a
}

func replyInt(a []any, i int) int64 {
	if i >= len(a) {
		return 0
	}
	switch x := a[i].(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func replyUint(a []any, i int) uint64 {
	if i >= len(a) {
		return 0
	}
	switch x := a[i].(type) {
	case int64:
		return uint64(x)
	case string:
		n, _ := strconv.ParseUint(x, 10, 64)
		return n
	}
	return 0
}

func replyStr(a []any, i int) string {
	if i >= len(a) {
		return ""
	}
	switch x := a[i].(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}
