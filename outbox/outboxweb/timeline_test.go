package outboxweb

import (
	"strings"
	"testing"
	"time"

	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

func TestBuildTimeline(t *testing.T) {
	p := pairlimit.Policy{Interval: time.Second, Burst: 45, BurstWindow: 200 * time.Millisecond}
	t0 := time.Unix(1_800_000_000, 0)
	var evs []outbox.LaneEvent
	send := func(key string, at time.Duration, end outbox.State, code int) {
		evs = append(evs, outbox.LaneEvent{At: t0.Add(at), Key: key, State: outbox.StateSending},
			outbox.LaneEvent{At: t0.Add(at + time.Millisecond), Key: key, State: end, Code: code})
	}
	for i := range 5 {
		send(string(rune('a'+i)), time.Duration(i)*10*time.Millisecond, outbox.StateAccepted, 0)
	}
	send("victim", 300*time.Millisecond, outbox.StateQueued, 131056)
	send("other", 400*time.Millisecond, outbox.StateFailed, 131049)
	tl := buildTimeline(evs, p)
	if tl.Sends != 5 || tl.Refusals != 1 || tl.Failures != 1 || len(tl.Marks) != 7 {
		t.Fatalf("timeline %+v", tl)
	}
	v := tl.Marks[5]
	if !v.Refused || v.BurstLen != 5 || !v.BurstStart.Equal(t0) || !v.BurstEnd.Equal(t0.Add(40*time.Millisecond)) {
		t.Errorf("refusal %+v", v)
	}
	// 5 s of debt from sends 10 ms apart: 4.96 s at the last send, 4.7 s
	// left at the refusal 260 ms later.
	if want := 5*time.Second - 40*time.Millisecond; tl.MaxDebt != want {
		t.Errorf("max debt %v, want %v", tl.MaxDebt, want)
	}
	if want := 5*time.Second - 300*time.Millisecond; v.Debt != want {
		t.Errorf("debt at the refusal %v, want %v", v.Debt, want)
	}
	if !tl.To.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("timeline ends at %v, want when the debt is repaid", tl.To.Sub(t0))
	}
	svg := tl.svg()
	for _, want := range []string{`class="send"`, `class="refusal"`, "131056", "burst of 5", `class="failure"`, `class="debt"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %s", want)
		}
	}
	if n := strings.Count(svg, `class="send"`); n != 5 {
		t.Errorf("%d sends drawn", n)
	}
	if empty := (timeline{}).svg(); !strings.Contains(empty, "No dispatch") {
		t.Errorf("empty timeline: %s", empty)
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{4960 * time.Millisecond, 5 * time.Second},
		{time.Second, time.Second},
		{6 * time.Second, 10 * time.Second},
		{18 * time.Second, 20 * time.Second},
		{270 * time.Second, 500 * time.Second},
		{3 * time.Millisecond, 10 * time.Millisecond},
	} {
		if got := niceCeil(tc.in); got != tc.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
