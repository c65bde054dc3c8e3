package pairlimit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wapace/wapace/internal/pairkey"
	"github.com/wapace/wapace/internal/phone"
	"github.com/wapace/wapace/pairlimit"
)

// Meta's business-scoped user IDs page (developers.facebook.com,
// business-messaging/whatsapp/business-scoped-user-ids): a user with a
// username is addressed by a BSUID, country code, dot, ID.
func TestBSUIDPairPacedLikePhonePair(t *testing.T) {
	t.Parallel()
	bs := mustPair(t, "106540352242922", "CO.1949266959121697")
	ph := mustPair(t, "106540352242922", "+57 300 000 0001")
	if bs == ph || !isBSUID(bs) || isBSUID(ph) {
		t.Fatalf("pairs %v and %v", bs, ph)
	}
	if bs.To() != "CO.1949266959121697" {
		t.Errorf("To() = %q", bs.To())
	}
	if s := bs.String(); s != "106540352242922>CO.*************697" {
		t.Errorf("String() = %q", s)
	}
	a, b := pairlimit.New(pairlimit.Meta), pairlimit.New(pairlimit.Meta)
	for i, at := range []time.Duration{0, time.Second, 3 * time.Second, 20 * time.Second, 21 * time.Second} {
		for _, n := range []int{1, 3} {
			ra := a.ReserveN(t0.Add(at), bs, n)
			rb := b.ReserveN(t0.Add(at), ph, n)
			if !ra.OK() || !ra.TimeToAct().Equal(rb.TimeToAct()) {
				t.Errorf("step %d n=%d: BSUID acts at %v, phone at %v", i, n, ra.TimeToAct().Sub(t0), rb.TimeToAct().Sub(t0))
			}
		}
	}
	// Different keys: the phone pair's debt does not delay the BSUID pair.
	lim := pairlimit.New(pairlimit.Meta)
	lim.ReserveN(t0, ph, 10)
	if r := lim.ReserveN(t0, bs, 1); r.DelayFrom(t0) != 0 {
		t.Errorf("BSUID pair waits %v for the phone pair's debt", r.DelayFrom(t0))
	}
}

// Meta, "Business-scoped user IDs": the documented example
// US.13491208655302741918 (20 digits), alphanumeric IDs of up to 128
// characters and parent BSUIDs (US.ENT.…) must all be paced and sent to.
func TestNewPairAcceptsEveryMetaBSUID(t *testing.T) {
	t.Parallel()
	ids := []string{"US.13491208655302741918", "BR.1A2B3C4D5E6F7G8H9I0J", "US.ENT.11815799212886844830",
		"CO.0123", "BR." + strings.Repeat("x9", 64)}
	lim := pairlimit.New(pairlimit.Meta, pairlimit.WithMargin(0))
	for _, to := range ids {
		p, err := pairlimit.NewPair("106540352242922", to)
		if err != nil {
			t.Errorf("NewPair(%q): %v", to, err)
			continue
		}
		if !isBSUID(p) || p.To() != to || p.IsZero() {
			t.Errorf("NewPair(%q): BSUID %v, To %q", to, isBSUID(p), p.To())
		}
		if s := p.String(); len(to) > 10 && strings.Contains(s, to[len(to)-8:]) {
			t.Errorf("String() = %q reveals the ID", s)
		}
		if got, err := pairlimit.NormalizeRecipient(to); err != nil || got != to {
			t.Errorf("NormalizeRecipient(%q) = %q, %v", to, got, err)
		}
		// Paced like a phone pair, each on its own: none waits for another.
		if r := lim.ReserveN(t0, p, 1); !r.OK() || r.DelayFrom(t0) != 0 {
			t.Errorf("%q: first message waits %v", to, r.DelayFrom(t0))
		}
		if r := lim.ReserveN(t0, p, 1); r.DelayFrom(t0) != 6*time.Second {
			t.Errorf("%q: second message waits %v, want 6s", to, r.DelayFrom(t0))
		}
	}
	a, _ := pairlimit.NewPair("1", ids[0])
	b, _ := pairlimit.NewPair("1", ids[0])
	if a != b {
		t.Error("one BSUID gives two different pairs")
	}
	for _, bad := range []string{"co.1949266959121697", "US.ENT.", "US.12-34", "BR." + strings.Repeat("a", 129)} {
		if _, err := pairlimit.NewPair("1", bad); !errors.As(err, new(*pairlimit.NumberError)) {
			t.Errorf("NewPair(%q) = %v, want a *NumberError", bad, err)
		}
	}
}

func TestNormalizeRecipientBSUID(t *testing.T) {
	t.Parallel()
	if got, err := pairlimit.NormalizeRecipient("CO.1949266959121697"); err != nil || got != "CO.1949266959121697" {
		t.Errorf("NormalizeRecipient = %q, %v", got, err)
	}
	if got, err := pairlimit.NormalizeRecipient("+237 690 00 00 01"); err != nil || got != "237690000001" {
		t.Errorf("NormalizeRecipient = %q, %v", got, err)
	}
	if got := phone.Mask("CO.1949266959121697"); got != "CO.*************697" {
		t.Errorf("Mask = %q", got)
	}
}

// TestPairOf: the pair internal/pairkey builds from parsed parts is the
// one NewPair builds from the strings.
func TestPairOf(t *testing.T) {
	t.Parallel()
	pairOf := pairkey.Of.(func(uint64, phone.Recipient) pairlimit.Pair)
	for _, to := range []string{"CO.1949266959121697", "+237690000001", "US.13491208655302741918"} {
		r, err := phone.ParseTo(to)
		if err != nil {
			t.Fatal(err)
		}
		from, _ := phone.ParseFrom("106540352242922")
		if got, want := pairOf(from, r), mustPair(t, "106540352242922", to); got != want {
			t.Errorf("PairOf = %v, NewPair = %v", got, want)
		}
	}
	if !pairOf(0, phone.Recipient{}).IsZero() {
		t.Error("PairOf of zero values is not the zero Pair")
	}
}

// isBSUID reports whether p's recipient is a business-scoped user ID, as
// the module's recipient parser reads its canonical form.
func isBSUID(p pairlimit.Pair) bool {
	r, err := phone.ParseTo(p.To())
	return err == nil && r.IsBSUID()
}
