package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/wapace/wapace/internal/program/sendlog"
)

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("replay", "replay [-show-numbers] LOG\n\nReads a JSON-lines send log (the cloudapi Client's logger, \"wapace attempt\" lines;\nLOG - is standard input), groups the attempts by pair, and replays each pair that met a\n131056 through Meta's pair rule: the refused message is usually the victim of a burst\nthat came before it.", stderr)
	show := fs.Bool("show-numbers", false, "print recipients as the log has them (the Client's logs mask them already)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("want one LOG")
	}
	var in io.Reader = os.Stdin
	if p := fs.Arg(0); p != "-" {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	return replay(ctx, in, stdout, progressTo(stderr), *show)
}

// progressTo returns stderr when it is a terminal (progress is shown
// there), nil otherwise.
func progressTo(stderr io.Writer) io.Writer {
	if f, ok := stderr.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return stderr
		}
	}
	return nil
}

// replay explains every 131056 of the log read from in.
func replay(ctx context.Context, in io.Reader, out, progress io.Writer, show bool) error {
	l, err := sendlog.Read(in, func(n int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if progress != nil {
			fmt.Fprintf(progress, "\rread %d lines", n)
		}
		return nil
	})
	if l != nil && progress != nil && l.Lines >= sendlog.Every {
		fmt.Fprintf(progress, "\rread %d lines\n", l.Lines)
	}
	if err != nil {
		return err
	}
	rs := l.Refusals()
	for _, r := range rs {
		a, v := r.Attempt, r.Verdict
		fmt.Fprintf(out, "131056 for %s (pair %s) at %s, message %s\n", mask(a.To, show), r.Pair, a.At.UTC().Format(time.RFC3339Nano), a.Key)
		if v.Accepted {
			fmt.Fprintln(out, "  the log alone does not explain it: by this log the pair owed nothing (another sender on the number?)")
			continue
		}
		fmt.Fprintf(out, "  victim of a burst of %d that began at %s (%v earlier); the pair still owed %v\n",
			v.BurstLen, v.BurstStart.UTC().Format(time.RFC3339Nano), a.At.Sub(v.BurstStart).Round(10*time.Millisecond), v.Debt.Round(10*time.Millisecond))
		fmt.Fprintln(out, "  fix: after a burst of n, hold the pair n x 6 s (pairlimit does), or send fewer bubbles")
	}
	fmt.Fprintf(out, "%d attempts read, %d pairs, %d 131056 explained\n", l.Attempts(), len(l.ByPair), len(rs))
	return nil
}
