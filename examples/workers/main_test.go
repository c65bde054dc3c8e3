package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/wapace/wapace/internal/redistest"
)

// TestMain lets the test binary serve as the example's worker processes.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := run(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "workers:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestThreeProcessesPaceAsOne(t *testing.T) {
	url := redistest.URL(t)
	if err := run([]string{"-fast", "-redis", url, "-campaign", "30"}); err != nil {
		t.Fatal(err)
	}
}
