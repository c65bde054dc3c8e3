package errcodes_test

import (
	"testing"
	"unicode/utf8"

	"github.com/wapace/wapace/errcodes"
)

// Issue 11, promise 6: numbers Sanitize missed.
func TestSanitizeMasksEveryNumberSpelling(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"call +1 415-555-0100 now":   "call +[number] now",
		"(415) 555-0100":             "([number]",
		"full width ２３７６９０００００１":     "full width [number]",
		"arabic ٢٣٧٦٩٠٠٠٠٠١":         "arabic [number]",
		"split 41555\xff50100 bytes": "split [number] bytes",
		"code (#131056) at 12:30":    "code (#131056) at 12:30",
		"year 2026-11-30":            "year [number]",
		"short 555-0100":             "short [number]",
		"six 123 456":                "six 123 456",
	} {
		if got := errcodes.Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	f.Add("+1 415-555-0100")
	f.Add("２３７６９０００００１\xff")
	f.Fuzz(func(t *testing.T, s string) {
		out := errcodes.Sanitize(s)
		if len(out) > 200 || !utf8.ValidString(out) {
			t.Fatalf("Sanitize(%q) = %q", s, out)
		}
		digits := 0
		for _, r := range out {
			if r >= '0' && r <= '9' || r >= '０' && r <= '９' {
				digits++
				if digits >= 7 {
					t.Fatalf("Sanitize(%q) = %q keeps a run of 7 digits", s, out)
				}
			} else {
				digits = 0
			}
		}
	})
}
