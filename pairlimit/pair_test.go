package pairlimit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wapace/wapace/internal/phone"
	"github.com/wapace/wapace/pairlimit"
)

func TestNewPairNormalises(t *testing.T) {
	t.Parallel()
	same := []string{"+237 690 00 00 01", "237-690-000-001", "237690000001", "00237690000001", "+237 (690) 00.00.01", " +237/690000001"}
	want, err := pairlimit.NewPair("106540352242922", "237690000001")
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range same {
		got, err := pairlimit.NewPair("106540352242922", to)
		if err != nil {
			t.Errorf("NewPair(%q): %v", to, err)
			continue
		}
		if got != want {
			t.Errorf("NewPair(%q) = %v, want %v", to, got, want)
		}
	}
	if want.From() != "106540352242922" || want.To() != "237690000001" {
		t.Errorf("From/To = %q/%q", want.From(), want.To())
	}
	if s := want.String(); s != "106540352242922>2376*****001" {
		t.Errorf("String() = %q", s)
	}
	other, _ := pairlimit.NewPair("106540352242923", "237690000001")
	if other == want {
		t.Error("pairs of different business numbers compare equal")
	}
}

func TestNewPairRejects(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, from, to, reason string }{
		{"too short", "1", "123456", "has 6 digits, want 7 to 15"},
		{"too long", "1", "+1234567890123456", "more than 15 digits"},
		{"letters", "1", "23769OOOOO1", "contains a character that is not a digit or separator"},
		{"empty", "1", "", "has 0 digits, want 7 to 15"},
		{"national format", "1", "0690000001", "national format (leading 0); use the international format with country code"},
		{"plus inside", "1", "237+690000001", "'+' is allowed only at the start"},
		{"emoji", "1", "237690000001😀", "contains a character that is not a digit or separator"},
		{"empty from", "", "237690000001", "empty phone number ID"},
		{"non-numeric from", "PHONE_ID", "237690000001", "phone number ID must be digits only"},
		{"zero from", "000", "237690000001", "phone number ID is zero"},
		{"huge from", "12345678901234567890", "237690000001", "phone number ID longer than 19 digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := pairlimit.NewPair(tt.from, tt.to)
			if err == nil {
				t.Fatalf("NewPair(%q, %q) = %v, want an error", tt.from, tt.to, p)
			}
			var ne *pairlimit.NumberError
			if !errors.As(err, &ne) || ne.Reason != tt.reason {
				t.Fatalf("error = %#v, want reason %q", err, tt.reason)
			}
			if len(tt.to) >= 7 && strings.Contains(err.Error(), tt.to) {
				t.Errorf("error %q repeats the number", err)
			}
			if !p.IsZero() {
				t.Error("rejected pair is not zero")
			}
		})
	}
}

// TestMaskRecipient: Pair.String masks the recipient with phone.Mask.
func TestMaskRecipient(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"237690000001": "2376*****001", "1234567": "*******", "12": "**", "": "*", "12345678": "1234*678"} {
		if got := phone.Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
	if got := mustPair(t, "1001", "237690000001").String(); got != "1001>2376*****001" {
		t.Errorf("String() = %q", got)
	}
}

func FuzzNewPair(f *testing.F) {
	for _, s := range []string{"+237 690 00 00 01", "237-690-000-001", "00237690000001", "0690000001", "++1", "1 2 3 4 5 6 7", "+"} {
		f.Add("106540352242922", s)
	}
	f.Fuzz(func(t *testing.T, from, to string) {
		p, err := pairlimit.NewPair(from, to)
		if err != nil {
			if !errors.As(err, new(*pairlimit.NumberError)) || !p.IsZero() {
				t.Fatalf("NewPair error %v with pair %v", err, p)
			}
			return
		}
		if p.IsZero() {
			t.Fatal("accepted the zero pair")
		}
		digits := p.To()
		if len(digits) > 2 && digits[2] == '.' { // a BSUID, kept as given
			if digits != to {
				t.Fatalf("BSUID %q altered to %q", to, digits)
			}
			if again, err := pairlimit.NewPair(p.From(), digits); err != nil || again != p {
				t.Fatalf("BSUID does not round-trip: %v, %v", again, err)
			}
			return
		}
		if len(digits) < 7 || len(digits) > 15 || digits[0] == '0' {
			t.Fatalf("normalised recipient %q is not E.164", digits)
		}
		again, err := pairlimit.NewPair(p.From(), "+"+digits)
		if err != nil || again != p {
			t.Fatalf("normalised form does not round-trip: %v, %v", again, err)
		}
		if n, err := pairlimit.NormalizeRecipient(to); err != nil || n != digits {
			t.Fatalf("NormalizeRecipient = %q, %v; want %q", n, err, digits)
		}
	})
}
