package fakemeta

import (
	"io"
	"strings"
	"testing"
)

// FuzzParseFlags: any command line parses to a config or an error, never
// a panic; a parsed one has a usable rate and pair rule.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{"-mps 20", "-fail 131056@+237 690 00 00 01", "-fail hang -fail reset@CO.1",
		"-number-mps 1=5 -maintenance 2=1s", "-tier 3 -tier-code 131064", "-pair-interval 0s", "-fail x@", "-number-mps =1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := parseFlags(strings.Fields(line), io.Discard)
		if err != nil {
			return
		}
		if c.mps < 1 || c.tierCode <= 0 || c.pairInterval <= 0 || c.pairBurst < 1 || c.pairWindow <= 0 {
			t.Fatalf("%q parsed to an unusable config %+v", line, c)
		}
		for _, fl := range c.failures {
			if fl.Code <= 0 && !fl.Reset && !fl.Hang {
				t.Fatalf("%q: failure %+v does nothing", line, fl)
			}
		}
	})
}
