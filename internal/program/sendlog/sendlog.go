// Package sendlog reads a send log, the JSON lines the cloudapi Client's
// logger writes, and replays through Meta's pair rule each pair that met
// a 131056, for `wapace replay` and examples/forensics.
package sendlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/pairlimit"
)

// Attempt is the part of a "wapace attempt" log line the readers need.
type Attempt struct {
	Msg   string    `json:"msg"`
	At    time.Time `json:"at"`
	Pair  string    `json:"pair"`
	To    string    `json:"to"`
	State string    `json:"state"`
	Code  int       `json:"code"`
	Key   string    `json:"key"`
}

// Log is the attempts of a send log, by pair.
type Log struct {
	Pairs  []string             // the pairs, in the order of their first attempt
	ByPair map[string][]Attempt // each pair's attempts, in the log's order
	Lines  int                  // the lines read
}

// Attempts returns how many attempts the log holds.
func (l *Log) Attempts() int {
	n := 0
	for _, as := range l.ByPair {
		n += len(as)
	}
	return n
}

// Every is how many lines Read reads between two calls of its progress
// function.
const Every = 100_000

// Read reads a send log from in: lines that are not "wapace attempt"
// lines with a pair are skipped, and a line that is not JSON is an error
// naming it. progress, unless nil, is called with the lines read so far
// after every Every lines; an error from it ends the read.
func Read(in io.Reader, progress func(lines int) error) (*Log, error) {
	l := &Log{ByPair: map[string][]Attempt{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		l.Lines++
		if progress != nil && l.Lines%Every == 0 {
			if err := progress(l.Lines); err != nil {
				return nil, err
			}
		}
		var a Attempt
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, fmt.Errorf("line %d: not JSON: %w", l.Lines, err)
		}
		if a.Msg != "wapace attempt" || a.Pair == "" {
			continue
		}
		if _, ok := l.ByPair[a.Pair]; !ok {
			l.Pairs = append(l.Pairs, a.Pair)
		}
		l.ByPair[a.Pair] = append(l.ByPair[a.Pair], a)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return l, nil
}

// Refusal is a 131056 of the log with what Meta's pair rule says of it.
type Refusal struct {
	Pair    string
	Attempt Attempt
	// Verdict is pairlimit.Replay's for the attempt over its pair's log:
	// refused, it names the burst that spent the quota; accepted, the log
	// alone does not explain the refusal.
	Verdict pairlimit.Verdict
}

// Refusals replays each pair that met a 131056 through Meta's pair rule
// and returns its refusals, in the log's order.
func (l *Log) Refusals() []Refusal {
	var out []Refusal
	for _, p := range l.Pairs {
		as := l.ByPair[p]
		if !slices.ContainsFunc(as, refused) {
			continue
		}
		sends := make([]time.Time, len(as))
		for i, a := range as {
			sends[i] = a.At
		}
		verdicts := pairlimit.Replay(pairlimit.Meta, sends)
		for i, a := range as {
			if refused(a) {
				out = append(out, Refusal{Pair: p, Attempt: a, Verdict: verdicts[i]})
			}
		}
	}
	return out
}

func refused(a Attempt) bool { return a.Code == int(errcodes.PairRateLimit) }
