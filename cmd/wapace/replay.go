package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/pairlimit"
)

// logLine is the part of a "wapace attempt" log line replay reads (as the
// cloudapi Client's logger writes it, JSON lines).
type logLine struct {
	Msg  string    `json:"msg"`
	At   time.Time `json:"at"`
	Pair string    `json:"pair"`
	To   string    `json:"to"`
	Code int       `json:"code"`
	Key  string    `json:"key"`
}

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
	byPair := map[string][]logLine{}
	var order []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		if n%100_000 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if progress != nil {
				fmt.Fprintf(progress, "\rread %d lines", n)
			}
		}
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("line %d: not JSON: %w", n, err)
		}
		if l.Msg != "wapace attempt" || l.Pair == "" {
			continue
		}
		if _, ok := byPair[l.Pair]; !ok {
			order = append(order, l.Pair)
		}
		byPair[l.Pair] = append(byPair[l.Pair], l)
	}
	if progress != nil && n >= 100_000 {
		fmt.Fprintf(progress, "\rread %d lines\n", n)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	found, attempts := 0, 0
	for _, p := range order {
		ls := byPair[p]
		attempts += len(ls)
		if !slices.ContainsFunc(ls, func(l logLine) bool { return l.Code == int(errcodes.PairRateLimit) }) {
			continue
		}
		sends := make([]time.Time, len(ls))
		for i, l := range ls {
			sends[i] = l.At
		}
		verdicts := pairlimit.Replay(pairlimit.Meta, sends)
		for i, l := range ls {
			if l.Code != int(errcodes.PairRateLimit) {
				continue
			}
			found++
			v := verdicts[i]
			fmt.Fprintf(out, "131056 for %s (pair %s) at %s, message %s\n", mask(l.To, show), p, l.At.UTC().Format(time.RFC3339Nano), l.Key)
			if v.Accepted {
				fmt.Fprintln(out, "  the log alone does not explain it: by this log the pair owed nothing (another sender on the number?)")
				continue
			}
			fmt.Fprintf(out, "  victim of a burst of %d that began at %s (%v earlier); the pair still owed %v\n",
				v.BurstLen, v.BurstStart.UTC().Format(time.RFC3339Nano), l.At.Sub(v.BurstStart).Round(10*time.Millisecond), v.Debt.Round(10*time.Millisecond))
			fmt.Fprintln(out, "  fix: after a burst of n, hold the pair n x 6 s (pairlimit does), or send fewer bubbles")
		}
	}
	fmt.Fprintf(out, "%d attempts read, %d pairs, %d 131056 explained\n", attempts, len(byPair), found)
	return nil
}
