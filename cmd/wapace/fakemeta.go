package main

import (
	"context"
	"io"
	"strings"

	"github.com/wapace/wapace/internal/program/fakemeta"
)

// runFakemeta serves the fake Cloud API, with wapace-fakemeta's flags.
func runFakemeta(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := fakemeta.Run(ctx, args, stdout, stderr)
	if err != nil && isFlagError(err) {
		return usageErr("fakemeta: %v", err)
	}
	return err
}

// isFlagError reports whether err is a complaint about the command line:
// the flag package's own, or fakemeta's checks of the flags' values.
func isFlagError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"flag provided but not defined", "invalid value", "invalid boolean", "flag needs an argument",
		"unexpected arguments", "must be", "bad flag syntax"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
