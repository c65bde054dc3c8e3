package wapace_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestGoVersionOneTruth: issue 23 item 14. README.md said Go 1.26 while
// go.mod said 1.25. go.mod's go line is the truth; the README repeats it.
func TestGoVersionOneTruth(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)(\.\d+)?$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	want, line := string(m[1]), "go "+string(m[1])+string(m[2])
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	claims := regexp.MustCompile(`Go (\d+\.\d+)(\.\d+)? or newer`).FindAllSubmatch(readme, -1)
	if len(claims) == 0 {
		t.Fatalf("README.md does not say which Go it needs (want \"Go %s or newer\")", want)
	}
	for _, c := range claims {
		if string(c[1]) != want {
			t.Errorf("README.md says %q, go.mod says %s", c[0], line)
		}
	}
	for _, q := range regexp.MustCompile("`go \\d+\\.\\d+(\\.\\d+)?`").FindAll(readme, -1) {
		if got := strings.Trim(string(q), "`"); got != line {
			t.Errorf("README.md quotes go.mod as %q, it says %q", got, line)
		}
	}
}
