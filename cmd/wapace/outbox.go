package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/internal/phone"
	"github.com/wapace/wapace/outbox"
)

const outboxUsage = `usage: wapace outbox <stats|list|show|requeue|expire> -db DSN [flags] [KEY]

Run "wapace outbox <command> -h" for a command's flags.
`

func runOutbox(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, outboxUsage)
		return errUsage
	}
	switch args[0] {
	case "stats":
		return outboxStats(ctx, args[1:], stdout, stderr)
	case "list":
		return outboxList(ctx, args[1:], stdout, stderr)
	case "show":
		return outboxShow(ctx, args[1:], stdout, stderr)
	case "requeue":
		return outboxRequeue(ctx, args[1:], stdout, stderr)
	case "expire":
		return outboxExpire(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, outboxUsage)
		return nil
	}
	fmt.Fprint(stderr, outboxUsage)
	return usageErr("unknown outbox command %q", args[0])
}

// dbFlag adds -db (default $WAPACE_DB).
func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", os.Getenv("WAPACE_DB"), `the outbox's DSN: "sqlite:PATH" or a postgres:// URL (default $WAPACE_DB)`)
}

// open opens the outbox at dsn; a missing DSN is a usage error.
func open(ctx context.Context, dsn string) (*outbox.Outbox, error) {
	if dsn == "" {
		return nil, usageErr("-db is required (or set WAPACE_DB)")
	}
	if strings.HasPrefix(dsn, "sqlite:") {
		// Open would create an empty outbox: an operator's typo should not.
		if _, err := os.Stat(strings.TrimPrefix(dsn, "sqlite:")); err != nil {
			return nil, fmt.Errorf("no outbox at %s: %w", strings.TrimPrefix(dsn, "sqlite:"), err)
		}
	}
	return outbox.Open(ctx, dsn)
}

// parseNoArgs parses args into fs; the command name takes flags only.
func parseNoArgs(fs *flag.FlagSet, args []string, name string) error {
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s takes no argument", name)
	}
	return nil
}

// mask masks a phone number unless show.
func mask(s string, show bool) string {
	if show || s == "" {
		return s
	}
	return phone.Mask(s)
}

// clean makes a recorded reason safe to print: numbers masked unless show.
func clean(s string, show bool) string {
	if show {
		return s
	}
	return errcodes.Sanitize(s)
}

func outboxStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("outbox stats", "outbox stats -db DSN [-json]", stderr)
	db := dbFlag(fs)
	asJSON := fs.Bool("json", false, "print the Snapshot as JSON")
	if err := parseNoArgs(fs, args, "stats"); err != nil {
		return err
	}
	o, err := open(ctx, *db)
	if err != nil {
		return err
	}
	defer o.Close()
	s, err := o.Snapshot(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, snapshotJSON(s))
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, st := range states {
		fmt.Fprintf(tw, "%s\t%d\n", st, s.Counts[st])
	}
	fmt.Fprintf(tw, "dead letters\t%d\n", s.DeadLetters)
	fmt.Fprintf(tw, "live lanes\t%d\n", s.Lanes)
	fmt.Fprintf(tw, "deepest lane\t%d\n", s.DeepestLane)
	if !s.OldestQueued.IsZero() {
		fmt.Fprintf(tw, "oldest queued\t%v ago\n", s.At.Sub(s.OldestQueued).Round(time.Second))
	}
	return tw.Flush()
}

var states = []outbox.State{outbox.StateQueued, outbox.StateSending, outbox.StateAccepted, outbox.StateSubmittedUnknown,
	outbox.StateDelivered, outbox.StateRead, outbox.StateFailed, outbox.StateExpired}

// snapshotJSON is the JSON form of a Snapshot: states by name.
func snapshotJSON(s outbox.Stats) any {
	counts := map[string]int{}
	for _, st := range states {
		counts[st.String()] = s.Counts[st]
	}
	out := map[string]any{"at": s.At, "counts": counts, "lanes": s.Lanes, "deepest_lane": s.DeepestLane, "dead_letters": s.DeadLetters}
	if !s.OldestQueued.IsZero() {
		out["oldest_queued"] = s.OldestQueued
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stateFilter reads -state: dead (failed, expired), unknown
// (submitted_unknown), live (queued, sending), or one state's name.
func stateFilter(s string) ([]outbox.State, error) {
	switch s {
	case "", "all":
		return nil, nil
	case "dead":
		return []outbox.State{outbox.StateFailed, outbox.StateExpired}, nil
	case "unknown":
		return []outbox.State{outbox.StateSubmittedUnknown}, nil
	case "live":
		return []outbox.State{outbox.StateQueued, outbox.StateSending}, nil
	}
	for _, st := range states {
		if st.String() == s {
			return []outbox.State{st}, nil
		}
	}
	return nil, usageErr("-state %q: want dead, unknown, live, all or a state (queued, sending, accepted, submitted_unknown, delivered, read, failed, expired)", s)
}

// itemJSON is an item as the CLI prints it.
type itemJSON struct {
	Key        string           `json:"key"`
	From       string           `json:"from"`
	To         string           `json:"to"`
	Kind       string           `json:"kind"`
	State      string           `json:"state"`
	Attempts   int              `json:"attempts"`
	Resends    int              `json:"resends"`
	EnqueuedAt time.Time        `json:"enqueued_at"`
	ExpiresAt  *time.Time       `json:"expires_at,omitempty"`
	UpdatedAt  time.Time        `json:"updated_at"`
	MessageID  string           `json:"wamid,omitempty"`
	Code       int              `json:"code,omitempty"`
	Reason     string           `json:"reason,omitempty"`
	History    []transitionJSON `json:"history,omitempty"`
}

type transitionJSON struct {
	At     time.Time `json:"at"`
	State  string    `json:"state"`
	Reason string    `json:"reason,omitempty"`
}

func toJSON(it outbox.Item, show bool) itemJSON {
	j := itemJSON{Key: it.Key, From: it.From, To: mask(it.To, show), Kind: it.Kind, State: it.State.String(), Attempts: it.Attempts,
		Resends: it.Resends, EnqueuedAt: it.EnqueuedAt, UpdatedAt: it.UpdatedAt, MessageID: it.MessageID, Code: it.Code, Reason: clean(it.Reason, show)}
	if !it.ExpiresAt.IsZero() {
		e := it.ExpiresAt
		j.ExpiresAt = &e
	}
	for _, t := range it.History {
		j.History = append(j.History, transitionJSON{At: t.At, State: t.State.String(), Reason: clean(t.Reason, show)})
	}
	return j
}

func outboxList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("outbox list", "outbox list -db DSN [-state dead|unknown|queued|...] [-limit n] [-json] [-show-numbers]", stderr)
	db := dbFlag(fs)
	state := fs.String("state", "dead", "dead (failed, expired), unknown (submitted_unknown), live, all, or one state")
	limit := fs.Int("limit", outbox.DefaultListLimit, "at most this many items, the latest changed first")
	asJSON := fs.Bool("json", false, "print JSON lines")
	show := fs.Bool("show-numbers", false, "print recipients' phone numbers unmasked")
	if err := parseNoArgs(fs, args, "list"); err != nil {
		return err
	}
	sts, err := stateFilter(*state)
	if err != nil {
		return err
	}
	if *limit <= 0 || *limit > outbox.MaxListLimit {
		return usageErr("-limit must be 1 to %d", outbox.MaxListLimit)
	}
	o, err := open(ctx, *db)
	if err != nil {
		return err
	}
	defer o.Close()
	items, err := o.List(ctx, outbox.Query{States: sts, Limit: *limit})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, it := range items {
			if err := enc.Encode(toJSON(it, *show)); err != nil {
				return err
			}
		}
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSTATE\tFROM\tTO\tAGE\tATTEMPTS\tCODE\tREASON")
	for _, it := range items {
		code := ""
		if it.Code != 0 {
			code = fmt.Sprint(it.Code)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", it.Key, it.State, it.From, mask(it.To, *show), age(now, it.UpdatedAt),
			it.Attempts, code, clean(it.Reason, *show))
	}
	return tw.Flush()
}

// age renders how long ago t was, to the second.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String()
}

// oneKey reads the KEY argument.
func oneKey(fs *flag.FlagSet) (string, error) {
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		return "", usageErr("want exactly one KEY after the flags")
	}
	return fs.Arg(0), nil
}

func outboxShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("outbox show", "outbox show -db DSN [-json] [-show-numbers] KEY", stderr)
	db := dbFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	show := fs.Bool("show-numbers", false, "print the recipient's phone number unmasked")
	if err := parse(fs, args); err != nil {
		return err
	}
	key, err := oneKey(fs)
	if err != nil {
		return err
	}
	o, err := open(ctx, *db)
	if err != nil {
		return err
	}
	defer o.Close()
	it, err := o.Get(ctx, key)
	if err != nil {
		return err
	}
	return printItem(stdout, it, *asJSON, *show)
}

func printItem(w io.Writer, it outbox.Item, asJSON, show bool) error {
	if asJSON {
		return writeJSON(w, toJSON(it, show))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "key\t%s\n", it.Key)
	fmt.Fprintf(tw, "state\t%s\n", it.State)
	fmt.Fprintf(tw, "from\t%s\n", it.From)
	fmt.Fprintf(tw, "to\t%s\n", mask(it.To, show))
	fmt.Fprintf(tw, "kind\t%s\n", it.Kind)
	fmt.Fprintf(tw, "attempts\t%d\n", it.Attempts)
	if it.Resends > 0 {
		fmt.Fprintf(tw, "resends\t%d\n", it.Resends)
	}
	fmt.Fprintf(tw, "enqueued\t%s\n", it.EnqueuedAt.UTC().Format(time.RFC3339Nano))
	if !it.ExpiresAt.IsZero() {
		fmt.Fprintf(tw, "expires\t%s\n", it.ExpiresAt.UTC().Format(time.RFC3339Nano))
	}
	if it.MessageID != "" {
		fmt.Fprintf(tw, "wamid\t%s\n", it.MessageID)
	}
	if it.Code != 0 {
		fmt.Fprintf(tw, "code\t%d\n", it.Code)
	}
	if it.Reason != "" {
		fmt.Fprintf(tw, "reason\t%s\n", clean(it.Reason, show))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nhistory:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range it.History {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.At.UTC().Format(time.RFC3339Nano), t.State, clean(t.Reason, show))
	}
	return tw.Flush()
}

func outboxRequeue(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("outbox requeue", "outbox requeue -db DSN -reason TEXT [-force] [-expires DURATION] KEY", stderr)
	db := dbFlag(fs)
	reason := fs.String("reason", "", "why (required): recorded with the transition")
	force := fs.Bool("force", false, "requeue an item that may have been sent (it may reach the user twice)")
	expires := fs.Duration("expires", 0, "a new freshness deadline from now (required when the item's has passed)")
	if err := parse(fs, args); err != nil {
		return err
	}
	key, err := oneKey(fs)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usageErr("-reason is required")
	}
	if *expires < 0 {
		return usageErr("-expires must be positive")
	}
	o, err := open(ctx, *db)
	if err != nil {
		return err
	}
	defer o.Close()
	opts := outbox.RequeueOptions{Reason: *reason, Force: *force}
	if *expires > 0 {
		opts.ExpiresAt = time.Now().Add(*expires)
	}
	it, err := o.Requeue(ctx, key, opts)
	if errors.Is(err, outbox.ErrMayHaveBeenSent) {
		return fmt.Errorf("%w (it is not requeued; -force sends it again, and it may reach the user twice)", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s requeued\n", it.Key)
	return nil
}

func outboxExpire(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("outbox expire", "outbox expire -db DSN -reason TEXT KEY", stderr)
	db := dbFlag(fs)
	reason := fs.String("reason", "", "why (required): recorded with the transition")
	if err := parse(fs, args); err != nil {
		return err
	}
	key, err := oneKey(fs)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usageErr("-reason is required")
	}
	o, err := open(ctx, *db)
	if err != nil {
		return err
	}
	defer o.Close()
	it, err := o.Expire(ctx, key, *reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s expired\n", it.Key)
	return nil
}
