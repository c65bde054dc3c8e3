package wapace_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The module's internal packages sit on two floors (issue 20): the
// ground floor, internal/<pkg>, which the public packages import and which
// imports nothing of the module above it, and internal/program/<pkg>, the
// parts the commands, the examples and the system tests share, which
// import the public packages. Nothing on the ground floor may depend on a
// public package or on the floor above.
func TestInternalFloors(t *testing.T) {
	t.Parallel()
	const mod = "github.com/wapace/wapace/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./internal/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	ground := func(p string) bool {
		return strings.HasPrefix(p, mod+"internal/") && !strings.HasPrefix(p, mod+"internal/program/")
	}
	checked := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 || !ground(f[0]) {
			continue
		}
		checked++
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, mod) && !ground(imp) {
				t.Errorf("%s (ground floor) imports %s", strings.TrimPrefix(f[0], mod), strings.TrimPrefix(imp, mod))
			}
		}
	}
	if checked < 5 {
		t.Errorf("checked %d ground-floor packages; go list answered:\n%s", checked, out)
	}
}
