package clocktest

import (
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
)

// WallStepped returns t with its wall clock reading moved by d and its
// monotonic reading kept: the instant t's clock would read had the
// system's wall clock been stepped by d (by NTP, an operator, a virtual
// machine resuming) since the process started. time offers no way to make
// one: Add moves both readings, Round(0) drops the monotonic one. t
// without a monotonic reading is returned moved by d.
func WallStepped(t time.Time, d time.Duration) time.Time {
	if t == t.Round(0) {
		return t.Add(d)
	}
	moved := t.Round(0).Add(d) // the wall reading wanted, without a monotonic one
	// With a monotonic reading, wall holds the flag, 33 bits of seconds
	// since 1885 and 30 of nanoseconds; ext holds the monotonic reading.
	sec := moved.Unix() + unixTo1885
	if sec < 0 || sec >= 1<<33 {
		panic("clocktest: WallStepped past the range of a monotonic Time")
	}
	r := (*timeLayout)(unsafe.Pointer(&t))
	r.wall = hasMonotonic | uint64(sec)<<nsecBits | uint64(moved.Nanosecond())
	return t
}

// timeLayout mirrors time.Time's fields (checked at init).
type timeLayout struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

const (
	hasMonotonic = 1 << 63
	nsecBits     = 30
	unixTo1885   = 2682288000 // seconds from 1885-01-01 to 1970-01-01
)

func init() {
	tt := reflect.TypeFor[time.Time]()
	lt := reflect.TypeFor[timeLayout]()
	if tt.Size() != lt.Size() || tt.NumField() != lt.NumField() {
		panic("clocktest: time.Time is not laid out as WallStepped expects")
	}
	for i := range tt.NumField() {
		if tt.Field(i).Name != lt.Field(i).Name || tt.Field(i).Type.Kind() != lt.Field(i).Type.Kind() || tt.Field(i).Offset != lt.Field(i).Offset {
			panic("clocktest: time.Time is not laid out as WallStepped expects")
		}
	}
}

// Stepped is the real clock, whose wall clock can be stepped while the
// monotonic clock runs on: Now reads time.Now moved by the steps so far
// (WallStepped). Timers, tickers and sleeps are the real clock's, which
// run on the monotonic clock, as a step leaves them.
type Stepped struct {
	clock.Clock
	offset atomic.Int64
}

// NewStepped returns a Stepped clock, not stepped yet.
func NewStepped() *Stepped { return &Stepped{Clock: clock.New()} }

// Step moves the wall clock by d from now on.
func (c *Stepped) Step(d time.Duration) { c.offset.Add(int64(d)) }

// Now returns the stepped reading of time.Now.
func (c *Stepped) Now() time.Time { return WallStepped(time.Now(), time.Duration(c.offset.Load())) }

// Since returns the time elapsed since t, on the monotonic clock when t
// has a reading of it.
func (c *Stepped) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the time until t.
func (c *Stepped) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }
