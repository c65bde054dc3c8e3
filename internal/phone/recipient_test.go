package phone_test

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

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

// Meta, "Business-scoped user IDs"
// (developers.facebook.com/documentation/business-messaging/whatsapp/business-scoped-user-ids/):
// a BSUID is the user's ISO 3166 alpha-2 country code, a period and up to
// 128 alphanumeric characters (Meta's example US.13491208655302741918); a
// parent BSUID puts "ENT." after the country code
// (US.ENT.11815799212886844830). Every one of them must parse, keep its
// exact form and get a key of its own.
func TestParseToMetaBSUIDs(t *testing.T) {
	t.Parallel()
	long := "BR." + strings.Repeat("aZ9", 42) + "xy" // 128 characters
	tests := []struct {
		in     string
		packed bool // keyed losslessly (the key holds the BSUID whole)
	}{
		{"CO.1949266959121697", true},
		{"BR.1502576394655843", true},
		{"IN.1648738043044942", true},
		{"US.13491208655302741918", false}, // Meta's own example: 20 digits
		{"BR.1A2B3C4D5E6F7G8H9I0J", false},
		{"US.ENT.11815799212886844830", false},
		{"US.ENT.1", false},
		{"CO.0123", false},             // leading 0: the integer would lose it
		{"ZZ.9007199254740992", false}, // 2^53
		{"ZZ.9007199254740991", true},
		{"US.abc", false},
		{"US.ENT", false}, // "ENT" alone is an ID
		{long, false},
	}
	seen := map[uint64]string{}
	for _, tt := range tests {
		r, err := phone.ParseTo(tt.in)
		if err != nil {
			t.Errorf("ParseTo(%q): %v", tt.in, err)
			continue
		}
		if !r.IsBSUID() || r.IsZero() || r.String() != tt.in {
			t.Errorf("ParseTo(%q) = %q, IsBSUID %v", tt.in, r.String(), r.IsBSUID())
		}
		if got := phone.RecipientOf(r.Key()) == r; got != tt.packed {
			t.Errorf("ParseTo(%q): key round-trips %v, want %v", tt.in, got, tt.packed)
		}
		if !tt.packed && !phone.RecipientOf(r.Key()).IsZero() {
			t.Errorf("RecipientOf(hashed key of %q) is not the zero Recipient", tt.in)
		}
		if prev, dup := seen[r.Key()]; dup {
			t.Errorf("%q and %q share key %#x", prev, tt.in, r.Key())
		}
		seen[r.Key()] = tt.in
		if again, err := phone.ParseTo(r.String()); err != nil || again != r {
			t.Errorf("ParseTo(String()) of %q = %q, %v", tt.in, again.String(), err)
		}
		if m := r.Masked(); len(tt.in) > 10 && strings.Contains(m, tt.in[len(tt.in)-7:]) {
			t.Errorf("Masked() = %q reveals the ID", m)
		}
	}
}

func TestParseToRejectsBSUID(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"co.1949266959121697", "Co.1949266959121697", "CO.", "US.ENT.",
		"CO.12 34", "CO.12-34", "CO.12_34", "US.ENT.ENT.1", "US.AB.CD", "US.ent.1x.",
		"CO.1949266959121697 ", "CO.é1", "CO.12\x00",
		"BR." + strings.Repeat("a", 129), "US.ENT." + strings.Repeat("9", 129),
	} {
		r, err := phone.ParseTo(in)
		var pe *phone.Error
		if !errors.As(err, &pe) {
			t.Errorf("ParseTo(%q) = %q, %v; want a *phone.Error", in, r.String(), err)
			continue
		}
		if !r.IsZero() {
			t.Errorf("ParseTo(%q) failed with a non-zero Recipient", in)
		}
		if len(in) > 6 && strings.Contains(pe.Error(), in[3:]) {
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
	for _, s := range []string{"CO.1949266959121697", "US.13491208655302741918", "US.ENT.11815799212886844830",
		"BR.1A2B3C4D5E6F7G8H9I0J", "+237 690 00 00 01", "co.1", "AB.", "AB.0", "ZZ.9007199254740991", "US.ENT.", "US.ENT"} {
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
		if r.IsZero() || r.Key() == 0 {
			t.Fatalf("%q parsed to the zero Recipient", in)
		}
		hashed := r.Key()>>61 == 7
		switch back := phone.RecipientOf(r.Key()); {
		case hashed && (!back.IsZero() || !r.IsBSUID()):
			t.Fatalf("%q: hashed key %#x turns back into %q", in, r.Key(), back.String())
		case !hashed && back != r:
			t.Fatalf("%q: key %#x does not round-trip", in, r.Key())
		}
		again, err := phone.ParseTo(r.String())
		if err != nil || again != r {
			t.Fatalf("%q: canonical %q re-parses to %q, %v", in, r.String(), again.String(), err)
		}
		if r.IsBSUID() {
			if r.String() != in {
				t.Fatalf("BSUID %q altered to %q", in, r.String())
			}
			if !bsuidRE.MatchString(in) {
				t.Fatalf("%q accepted as a BSUID", in)
			}
		}
		if m := r.Masked(); m == r.String() {
			t.Fatalf("Masked reveals %q", m)
		}
	})
}

// bsuidRE is Meta's BSUID grammar, the fuzz target's independent oracle.
var bsuidRE = regexp.MustCompile(`^[A-Z]{2}\.(ENT\.)?[A-Za-z0-9]{1,128}$`)

// Every string of Meta's grammar parses to the same BSUID; distinct ones
// get distinct keys (over packable samples, where keys are exact), and the
// packed and hashed spaces never meet the phone space or each other.
func TestPropertyBSUIDKeys(t *testing.T) {
	t.Parallel()
	cc := rapid.StringMatching(`[A-Z]{2}`)
	rapid.Check(t, func(t *rapid.T) {
		var in string
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0: // packable: 1 to 16 digits, no leading 0, below 2^53
			n := rapid.Uint64Range(1, 1<<53-1).Draw(t, "id")
			in = cc.Draw(t, "cc") + "." + strconv.FormatUint(n, 10)
		case 1:
			in = rapid.StringMatching(`[A-Z]{2}\.(ENT\.)?[A-Za-z0-9]{1,128}`).Draw(t, "bsuid")
		default:
			in = "+" + strconv.FormatUint(rapid.Uint64Range(1_000_000, 999_999_999_999_999).Draw(t, "phone"), 10)
		}
		r, err := phone.ParseTo(in)
		if err != nil {
			t.Fatalf("ParseTo(%q): %v", in, err)
		}
		if r.IsBSUID() && r.String() != in {
			t.Fatalf("%q became %q", in, r.String())
		}
		space := r.Key() >> 61
		switch {
		case !r.IsBSUID() && r.Key()>>63 != 0:
			t.Fatalf("phone %q in the BSUID space: %#x", in, r.Key())
		case r.IsBSUID() && r.Key()>>63 == 0:
			t.Fatalf("BSUID %q in the phone space: %#x", in, r.Key())
		case (space == 7) != (r.IsBSUID() && phone.RecipientOf(r.Key()).IsZero()):
			t.Fatalf("%q: key %#x in space %d, round-trips %v", in, r.Key(), space, !phone.RecipientOf(r.Key()).IsZero())
		}
	})
}

// Distinct packable BSUIDs and phone numbers never share a key: a sample of
// 200,000 random ones, all checked against each other.
func TestPackedKeysDistinct(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	keys := map[uint64]string{}
	for range 200_000 {
		var in string
		if rng.IntN(2) == 0 {
			in = string([]byte{byte('A' + rng.IntN(26)), byte('A' + rng.IntN(26))}) + "." + strconv.FormatUint(1+rng.Uint64N(1<<53-1), 10)
		} else {
			in = strconv.FormatUint(1_000_000+rng.Uint64N(999_999_999_000_000), 10)
		}
		r, err := phone.ParseTo(in)
		if err != nil {
			t.Fatalf("ParseTo(%q): %v", in, err)
		}
		if prev, ok := keys[r.Key()]; ok && prev != r.String() {
			t.Fatalf("%q and %q share key %#x", prev, r.String(), r.Key())
		}
		keys[r.Key()] = r.String()
	}
}
