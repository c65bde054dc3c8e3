package pairlimit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wapace/wapace/pairlimit"
)

// TestInvalidOptions: an option given a value the Limiter cannot honour is
// neither clamped nor ignored (issue 20). Every decision fails with an
// error matching ErrInvalidOption that names the option, nothing is
// reserved or held, and nothing panics.
func TestInvalidOptions(t *testing.T) {
	t.Parallel()
	p := mustPair(t, "1001", "237690000001")
	tests := []struct {
		name string
		opts []pairlimit.Option
		want string // in the error
	}{
		{"negative margin", []pairlimit.Option{pairlimit.WithMargin(-time.Millisecond)}, "WithMargin(-1ms)"},
		{"burst cap 0", []pairlimit.Option{pairlimit.WithBurstCap(0)}, "WithBurstCap(0)"},
		{"negative burst cap", []pairlimit.Option{pairlimit.WithBurstCap(-3)}, "WithBurstCap(-3)"},
		{"burst cap above Burst", []pairlimit.Option{pairlimit.WithBurstCap(46)}, "WithBurstCap(46)"},
		{"the first of two", []pairlimit.Option{pairlimit.WithBurstCap(46), pairlimit.WithMargin(-1)}, "WithBurstCap(46)"},
		{"after a valid one", []pairlimit.Option{pairlimit.WithMargin(0), pairlimit.WithBurstCap(99)}, "WithBurstCap(99)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lim := pairlimit.New(pairlimit.Meta, tt.opts...)
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, pairlimit.ErrInvalidOption) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s: %v, want ErrInvalidOption naming %s", what, err, tt.want)
				}
			}
			r := lim.ReserveN(t0, p, 1)
			if r.OK() || !r.TimeToAct().IsZero() {
				t.Errorf("ReserveN is OK")
			}
			check("ReserveN", r.Err())
			check("Reserve", lim.Reserve(p).Err())
			if lim.AllowN(t0, p, 1) || lim.Allow(p) {
				t.Error("AllowN admitted")
			}
			_, err := lim.ReadyAt(t0, p, 1)
			check("ReadyAt", err)
			check("WaitN", lim.WaitN(context.Background(), p, 1))
			if d := lim.Refused(t0, p); d != 0 {
				t.Errorf("Refused held %v", d)
			}
			lim.Accepted(t0, p)
			r.CancelAt(t0)
			r.Cancel()
			r.Refund()
			if lim.Len() != 0 {
				t.Errorf("%d pairs of state", lim.Len())
			}
		})
	}
	// The boundaries are valid.
	for _, o := range []pairlimit.Option{pairlimit.WithMargin(0), pairlimit.WithBurstCap(1), pairlimit.WithBurstCap(45), pairlimit.WithStore(nil), pairlimit.WithClock(nil)} {
		if r := pairlimit.New(pairlimit.Meta, o).ReserveN(t0, p, 1); !r.OK() {
			t.Errorf("a valid option: %v", r.Err())
		}
	}
}
