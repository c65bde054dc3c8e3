package outbox

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{"sqlite:/tmp/x.db", "sqlite:", "sqlite:a?b", "postgres://u:p@h/db", "postgresql://h", "postgres://", "mysql://x", "sqlite::memory:", "", "sqlite:file:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDSN(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidDSN) {
				t.Fatalf("%q: error %v does not match ErrInvalidDSN", s, err)
			}
			if strings.Contains(s, "@") && strings.Contains(err.Error(), s) {
				t.Fatalf("error repeats the DSN")
			}
			return
		}
		switch d.driver {
		case "sqlite":
			if !strings.HasPrefix(s, "sqlite:") || !strings.HasPrefix(d.source, "file:") {
				t.Fatalf("%q -> %+v", s, d)
			}
		case "pgx":
			if d.source != s {
				t.Fatalf("%q -> %+v", s, d)
			}
		default:
			t.Fatalf("%q -> driver %q", s, d.driver)
		}
	})
}

func FuzzOptions(f *testing.F) {
	f.Add(int64(1), int64(1), int64(time.Second), int64(0), 1, "w")
	f.Add(int64(-1), int64(0), int64(0), int64(-5), 0, "")
	f.Fuzz(func(t *testing.T, capacity, lane, lease, after int64, max int, id string) {
		c := defaultConfig()
		opts := []Option{WithCapacity(int(capacity)), WithLaneCapacity(int(lane)), WithLease(time.Duration(lease)),
			WithResend(ResendPolicy{After: time.Duration(after), Max: max}), WithWorkerID(id), WithConcurrency(int(lane))}
		for _, o := range opts {
			if err := o(&c); err != nil && !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("option error %v does not match ErrInvalidOption", err)
			}
		}
		if c.capacity < 1 || c.laneCapacity < 1 || c.lease < 10*time.Millisecond || c.concurrency < 1 || c.resend.After < 0 || (c.resend.After > 0 && c.resend.Max < 1) {
			t.Fatalf("an invalid option was accepted: %+v", c)
		}
	})
}

func TestStateNames(t *testing.T) {
	want := []string{"queued", "sending", "accepted", "submitted_unknown", "delivered", "read", "failed", "expired"}
	for i, w := range want {
		s := State(i)
		if s.String() != w {
			t.Errorf("State(%d) = %q, want %q", i, s, w)
		}
		if p, ok := parseState(w); !ok || p != s {
			t.Errorf("parseState(%q) = %v, %v", w, p, ok)
		}
	}
	if State(99).String() != "unknown" || State(-1).String() != "unknown" {
		t.Error("out-of-range states")
	}
}
