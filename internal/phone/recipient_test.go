package phone_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wapace/wapace/internal/phone"
)

func TestParseToBSUID(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"CO.1949266959121697", "BR.1502576394655843", "US.1", "ZZ.9007199254740991", "AA.7"} {
		r, err := phone.ParseTo(in)
		if err != nil {
			t.Errorf("ParseTo(%q): %v", in, err)
			continue
		}
		if !r.IsBSUID() || r.String() != in || r.IsZero() {
			t.Errorf("ParseTo(%q) = %q, IsBSUID %v", in, r.String(), r.IsBSUID())
		}
		if back := phone.RecipientOf(r.Key()); back != r {
			t.Errorf("RecipientOf(Key) of %q = %q", in, back.String())
		}
		if strings.Contains(r.Masked(), in[3:]) && len(in) > 6 {
			t.Errorf("Masked() = %q reveals the ID", r.Masked())
		}
	}
}

func TestParseToRejectsBSUID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in          string
		unsupported bool
	}{
		{"co.1949266959121697", false},
		{"Co.1949266959121697", false},
		{"CO.", false},
		{"CO.12 34", false},
		{"CO.12-34", false},
		{"US.13491208655302741918", true}, // 20 digits: does not fit
		{"ZZ.9007199254740992", true},     // 2^53
		{"BR.1A2B3C4D5E6F7G8H9I0J", true},
		{"US.ENT.11815799212886844830", true},
		{"CO.0123", true},
	}
	for _, tt := range tests {
		r, err := phone.ParseTo(tt.in)
		var pe *phone.Error
		if !errors.As(err, &pe) {
			t.Errorf("ParseTo(%q) = %q, %v; want a *phone.Error", tt.in, r.String(), err)
			continue
		}
		if pe.Unsupported != tt.unsupported {
			t.Errorf("ParseTo(%q): Unsupported = %v, want %v (%s)", tt.in, pe.Unsupported, tt.unsupported, pe.Reason)
		}
		if strings.Contains(pe.Error(), tt.in) {
			t.Errorf("error %q repeats the input", pe.Error())
		}
	}
}

func TestPhoneAndBSUIDKeysDiffer(t *testing.T) {
	t.Parallel()
	p, _ := phone.ParseTo("+57 1949266959")
	b, _ := phone.ParseTo("CO.1949266959")
	if p.Key() == b.Key() || p.IsBSUID() || !b.IsBSUID() {
		t.Errorf("phone key %x and BSUID key %x", p.Key(), b.Key())
	}
	if p.String() != "571949266959" {
		t.Errorf("phone canonical = %q", p.String())
	}
}

func TestMask(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"237690000001":        "2376*****001",
		"1234567":             "*******",
		"CO.1949266959121697": "CO.*************697",
		"CO.123456":           "CO.******",
		"CO.1":                "CO.*",
		"":                    "*",
	} {
		if got := phone.Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRecipientOfInvalidKey(t *testing.T) {
	t.Parallel()
	for _, k := range []uint64{0, 5, 1 << 63, 1<<63 | 700<<53 | 1} {
		if r := phone.RecipientOf(k); !r.IsZero() || r.String() != "" {
			t.Errorf("RecipientOf(%#x) = %q", k, r.String())
		}
	}
}

func FuzzParseTo(f *testing.F) {
	for _, s := range []string{"CO.1949266959121697", "US.13491208655302741918", "+237 690 00 00 01", "co.1", "AB.", "AB.0", "ZZ.9007199254740991"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r, err := phone.ParseTo(in)
		if err != nil {
			var pe *phone.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error of type %T", err)
			}
			if !r.IsZero() {
				t.Fatalf("error with a non-zero Recipient")
			}
			return
		}
		if r.IsZero() || phone.RecipientOf(r.Key()) != r {
			t.Fatalf("%q: key %#x does not round-trip", in, r.Key())
		}
		again, err := phone.ParseTo(r.String())
		if err != nil || again != r {
			t.Fatalf("%q: canonical %q re-parses to %q, %v", in, r.String(), again.String(), err)
		}
		if r.IsBSUID() && r.String() != in {
			t.Fatalf("BSUID %q altered to %q", in, r.String())
		}
		if m := r.Masked(); m == r.String() {
			t.Fatalf("Masked reveals %q", m)
		}
	})
}
