package phone_test

import (
	"strconv"
	"testing"

	"github.com/wapace/wapace/internal/phone"
)

func TestParseRecipient(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{
		"+237 690 00 00 01": 237690000001, "237-690-000-001": 237690000001, "00237690000001": 237690000001,
		" +44 (7700) 900.123": 447700900123, "1234567": 1234567, "123456789012345": 123456789012345,
	} {
		got, err := phone.ParseRecipient(in)
		if err != nil || got != want {
			t.Errorf("ParseRecipient(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "123456", "1234567890123456", "0690000001", "000237690000001", "23769O000001", "237+690000001", "++237690000001"} {
		if got, err := phone.ParseRecipient(in); err == nil {
			t.Errorf("ParseRecipient(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseFrom(t *testing.T) {
	t.Parallel()
	if got, err := phone.ParseFrom("106540352242922"); err != nil || got != 106540352242922 {
		t.Errorf("ParseFrom = %d, %v", got, err)
	}
	for _, in := range []string{"", "0", "12a", "-1", "12345678901234567890"} {
		if _, err := phone.ParseFrom(in); err == nil {
			t.Errorf("ParseFrom(%q) accepted", in)
		}
	}
}

func FuzzParseRecipient(f *testing.F) {
	for _, s := range []string{"+237 690 00 00 01", "00237690000001", "0690000001", "+", "1 2 3 4 5 6 7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n, err := phone.ParseRecipient(in)
		if err != nil {
			if _, ok := err.(*phone.Error); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		if n>>63 == 1 { // a BSUID's key: the same as ParseTo's
			if r, err := phone.ParseTo(in); err != nil || !r.IsBSUID() || r.Key() != n {
				t.Fatalf("%q: key %#x, ParseTo %#x %v", in, n, r.Key(), err)
			}
			return
		}
		s := strconv.FormatUint(n, 10)
		if len(s) < 7 || len(s) > 15 {
			t.Fatalf("%q parsed to %d digits", in, len(s))
		}
		if again, err := phone.ParseRecipient("+" + s); err != nil || again != n {
			t.Fatalf("%d does not round-trip: %d, %v", n, again, err)
		}
	})
}

func FuzzParseFrom(f *testing.F) {
	f.Add("106540352242922")
	f.Add("18446744073709551615")
	f.Fuzz(func(t *testing.T, in string) {
		n, err := phone.ParseFrom(in)
		if err == nil && (n == 0 || strconv.FormatUint(n, 10) != trimZeros(in)) {
			t.Fatalf("ParseFrom(%q) = %d", in, n)
		}
	})
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
