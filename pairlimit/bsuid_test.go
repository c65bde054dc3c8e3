package pairlimit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

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
	if bs == ph || !bs.IsBSUID() || ph.IsBSUID() {
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
			if !ra.OK() || ra.TimeToAct() != rb.TimeToAct() {
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

func TestNewPairRejectsUnsupportedBSUID(t *testing.T) {
	t.Parallel()
	for _, to := range []string{"US.13491208655302741918", "BR.1A2B3C4D5E6F7G8H9I0J", "US.ENT.11815799212886844830"} {
		_, err := pairlimit.NewPair("1", to)
		if !errors.Is(err, pairlimit.ErrUnsupportedBSUID) || !errors.Is(err, pairlimit.ErrInvalidNumber) {
			t.Errorf("NewPair(%q) = %v, want ErrUnsupportedBSUID", to, err)
		}
		if err != nil && strings.Contains(err.Error(), to[3:]) {
			t.Errorf("error %q repeats the ID", err)
		}
	}
	_, err := pairlimit.NewPair("1", "co.1949266959121697")
	if !errors.Is(err, pairlimit.ErrInvalidNumber) || errors.Is(err, pairlimit.ErrUnsupportedBSUID) {
		t.Errorf("lower-case country: %v", err)
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
	if got := pairlimit.MaskRecipient("CO.1949266959121697"); got != "CO.*************697" {
		t.Errorf("MaskRecipient = %q", got)
	}
}

func TestPairOf(t *testing.T) {
	t.Parallel()
	for _, to := range []string{"CO.1949266959121697", "+237690000001"} {
		r, err := phone.ParseTo(to)
		if err != nil {
			t.Fatal(err)
		}
		from, _ := phone.ParseFrom("106540352242922")
		if got, want := pairlimit.PairOf(from, r), mustPair(t, "106540352242922", to); got != want {
			t.Errorf("PairOf = %v, NewPair = %v", got, want)
		}
	}
	if !pairlimit.PairOf(0, phone.Recipient{}).IsZero() {
		t.Error("PairOf of zero values is not the zero Pair")
	}
}
