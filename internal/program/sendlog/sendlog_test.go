package sendlog

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// A burst of three, then a send 7 s after it: the pair still owed 11 s,
// so Meta's rule refuses it as the victim of the burst; a refusal with no
// debt before it is not explained by the log.
func TestRefusalsNameTheBurst(t *testing.T) {
	log := strings.Join([]string{
		`{"msg":"wapace attempt","at":"2026-11-30T09:00:00Z","pair":"a","to":"1","code":0}`,
		`{"msg":"other","at":"2026-11-30T09:00:00Z","pair":"a"}`,
		`{"msg":"wapace attempt","at":"2026-11-30T09:00:01Z","pair":"a","to":"1","code":0}`,
		`{"msg":"wapace attempt","at":"2026-11-30T09:00:02Z","pair":"b","to":"2","code":131056,"key":"kb"}`,
		`{"msg":"wapace attempt","at":"2026-11-30T09:00:02Z","pair":"a","to":"1","code":0}`,
		`{"msg":"wapace attempt","at":"2026-11-30T09:00:09Z","pair":"a","to":"1","code":131056,"key":"ka"}`,
	}, "\n")
	l, err := Read(strings.NewReader(log), nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Lines != 6 || l.Attempts() != 5 || len(l.Pairs) != 2 || l.Pairs[0] != "a" {
		t.Fatalf("read %d lines, %d attempts, pairs %v", l.Lines, l.Attempts(), l.Pairs)
	}
	rs := l.Refusals()
	if len(rs) != 2 {
		t.Fatalf("%d refusals, want 2", len(rs))
	}
	a, b := rs[0], rs[1]
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	if a.Pair != "a" || a.Attempt.Key != "ka" || a.Verdict.Accepted || a.Verdict.BurstLen != 3 || !a.Verdict.BurstStart.Equal(start) {
		t.Errorf("pair a: %+v", a)
	}
	if b.Pair != "b" || !b.Verdict.Accepted {
		t.Errorf("pair b: %+v, want unexplained", b)
	}
}

func TestReadErrors(t *testing.T) {
	if _, err := Read(strings.NewReader("{}\nnot json\n"), nil); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v", err)
	}
	stop := errors.New("stop")
	calls := 0
	_, err := Read(strings.NewReader(strings.Repeat("{}\n", Every+1)), func(n int) error {
		calls++
		if n != Every {
			t.Errorf("progress at %d lines", n)
		}
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("progress: %v after %d calls", err, calls)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"msg":"wapace attempt","at":"2026-12-01T10:00:00Z","pair":"p","to":"2376*****001","code":131056,"key":"k"}` + "\n"))
	f.Add([]byte("{}\n{}"))
	f.Add([]byte(`{"msg":"wapace attempt","at":"bad time","pair":"p"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Read(bytes.NewReader(data), nil)
		if err != nil {
			return
		}
		n := 0
		for _, r := range l.Refusals() {
			if r.Attempt.Code != 131056 {
				t.Errorf("refusal with code %d", r.Attempt.Code)
			}
			n++
		}
		if n > l.Attempts() {
			t.Errorf("%d refusals of %d attempts", n, l.Attempts())
		}
	})
}
