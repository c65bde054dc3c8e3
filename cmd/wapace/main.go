// Command wapace operates a wapace deployment: it inspects and acts on an
// outbox, explains 131056 refusals from a send log, serves the fake Cloud
// API, and serves the outbox's web console.
//
// Usage:
//
//	wapace outbox stats   -db DSN [-json]
//	wapace outbox list    -db DSN [-state dead|unknown|queued|STATE] [-limit n] [-json] [-show-numbers]
//	wapace outbox show    -db DSN [-json] [-show-numbers] KEY
//	wapace outbox requeue -db DSN -reason TEXT [-force] [-expires DURATION] KEY
//	wapace outbox expire  -db DSN -reason TEXT KEY
//	wapace replay [-show-numbers] LOG
//	wapace fakemeta [flags of wapace-fakemeta]
//	wapace console -db DSN [-addr 127.0.0.1:8080] [-token-file PATH] [-show-numbers]
//
// DSN is "sqlite:PATH" or a postgres:// URL, as outbox.Open takes it; it may
// also come from the WAPACE_DB environment variable. Every subcommand
// takes -h. Exit status: 0 on success, 1 on failure, 2 on a usage error.
// Phone numbers are masked unless -show-numbers; access tokens and
// passwords are never printed.
//
// requeue queues a dead-lettered (failed, expired) or submitted_unknown
// item again, recording the operator's -reason with the transition. An
// item that may have been sent (submitted_unknown, or accepted once) is
// refused unless -force: it could reach the user twice.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: wapace <command> [flags] [args]

commands:
  outbox stats|list|show|requeue|expire   inspect and act on an outbox
  replay LOG                              explain the 131056 refusals of a send log
  fakemeta                                serve the fake Cloud API (as wapace-fakemeta)
  console                                 serve the outbox's web console

Run "wapace <command> -h" for a command's flags.
`

// errUsage marks an error of the command line: exit status 2.
var errUsage = errors.New("usage")

// run executes the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "outbox":
		err = runOutbox(ctx, args[1:], stdout, stderr)
	case "replay":
		err = runReplay(ctx, args[1:], stdout, stderr)
	case "fakemeta":
		err = runFakemeta(ctx, args[1:], stdout, stderr)
	case "console":
		err = runConsole(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "wapace: unknown command %q\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		if msg := err.Error(); msg != errUsage.Error() {
			fmt.Fprintln(stderr, "wapace:", msg)
		}
		return 2
	default:
		fmt.Fprintln(stderr, "wapace:", err)
		return 1
	}
}

// usageErr is a usage error with a message.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errUsage)
}

// parse parses a subcommand's flags; a flag error is a usage error (the
// flag package has printed it and the usage), -h is flag.ErrHelp.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}

// newFlags returns a FlagSet writing its usage to stderr.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: wapace %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}
