package cloudapi

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/internal/slotmoves"
	"github.com/wapace/wapace/internal/writewindow"
	"github.com/wapace/wapace/pairlimit"
	"github.com/wapace/wapace/pairlimit/pairstore"
	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/throughputstore"
)

// Store keeps the state of a Client's limits outside the process, so that
// Clients in several processes pace as one: the pairs (pairstore.Store)
// and, through Throughput, each business number's throughput and the call
// budget (throughputstore.Store). *redisstore.Store implements it.
type Store interface {
	pairstore.Store
	// Throughput returns the store of the throughput buckets and tiers.
	Throughput() throughputstore.Store
}

// BudgetKey is the key under which a Client with WithStore keeps its call
// budget in the store's throughput buckets. Give each app and WABA its own
// store prefix (redisstore.WithPrefix) to keep their budgets apart.
const BudgetKey = "budget"

// WithStore keeps the limits the Client builds in s: the pair limiter
// (unless WithPairLimiter gives one), every business number's throughput
// limiter (keyed by its phone number ID) and the call budget (unless
// WithBudget gives one, keyed by BudgetKey). N Clients in N processes over
// one store then behave as one Client: a user never gets two messages
// closer than the pair rule allows, nor a number more than its throughput.
//
// The portfolio's tier is shared the same way when the Tier given to
// WithTier is built on the store: throughput.NewTier(limit,
// throughput.WithStore(s.Throughput(), portfolioID)).
//
// Counts of consecutive refusals and the adaptive rate after 130429 stay
// with each Client; the holds they apply are shared. When the store cannot
// decide (Redis is down), the message is not sent: Send returns an error
// whose state is StateNotSubmitted, wrapping the store's error.
//
// A store's instants are the wall clock's, which the processes must agree
// on; a step of it holds or frees slots for its length (see
// throughput.WithStore). A Client without a store paces on the monotonic
// clock, which a step does not move.
func WithStore(s Store) Option {
	return func(c *Client) error {
		if s == nil {
			return fmt.Errorf("%w: nil store", ErrInvalidOption)
		}
		c.store = s
		return nil
	}
}

// pairOptions are the options of the pair limiter the Client builds.
func (c *Client) pairOptions() []pairlimit.Option {
	opts := []pairlimit.Option{pairlimit.WithClock(c.clock)}
	if c.store != nil {
		opts = append(opts, pairlimit.WithStore(c.store))
	}
	return opts
}

// movingSlots is throughput's option that makes SetMPSAt move the slots
// still waiting, and slotMoved the channel a slot's wait follows (see
// internal/slotmoves): the Client's sends follow every move. windowed is
// throughput's option that gives a limiter a window of writes, and
// letWrite its decision (see internal/writewindow): the Client's
// write-time check lets every write through it and reports it.
var (
	movingSlots = slotmoves.Option.(func() throughput.Option)
	slotMoved   = slotmoves.Moved.(func(throughput.Reservation) <-chan struct{})
	slotStale   = slotmoves.Stale.(func(throughput.Reservation) bool)
	windowed    = writewindow.Option.(func() throughput.Option)
	letWrite    = writewindow.Let.(func(*throughput.Limiter, time.Time) (writewindow.Ticket, time.Duration))
	hasWindow   = writewindow.On.(func(*throughput.Limiter) bool)
)

// numberOptions are the options of business number id's throughput
// limiter.
func (c *Client) numberOptions(id string) []throughput.Option {
	// Its sends follow their slots' moves (SetMPSAt after an upgrade).
	opts := append([]throughput.Option{throughput.WithClock(c.clock), movingSlots(), windowed()}, c.tpOpts...)
	if c.store != nil {
		opts = append(opts, throughput.WithStore(c.store.Throughput(), id))
	}
	return opts
}

// budgetOptions are the options of the budget the Client builds.
func (c *Client) budgetOptions() []throughput.Option {
	opts := []throughput.Option{throughput.WithClock(c.clock)}
	if c.store != nil {
		opts = append(opts, throughput.WithStore(c.store.Throughput(), BudgetKey))
	}
	return opts
}
