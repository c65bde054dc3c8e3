package outboxweb

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"

	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/outbox"
	"github.com/wapace/wapace/pairlimit"
)

// mark is one dispatch on a pair's timeline and what came of it.
type mark struct {
	At      time.Time
	Key     string
	Outcome outbox.State // the state the dispatch ended in
	Code    int          // Meta's code when refused or failed
	Refused bool         // a 131056
	Debt    time.Duration
	// For a refusal: the burst that spent the pair's quota, by the pair
	// rule (BurstLen 0: the lane's record does not explain it, another
	// sender on the number may have).
	BurstStart time.Time
	BurstEnd   time.Time
	BurstLen   int
}

// timeline is a lane's dispatches and the pair's debt over them.
type timeline struct {
	Marks    []mark
	Sends    int // accepted or maybe accepted
	Refusals int // 131056s
	Failures int
	From, To time.Time
	MaxDebt  time.Duration
	interval time.Duration
	// debt is the pair's debt curve: (instant, debt) points.
	debt []debtPoint
}

type debtPoint struct {
	at   time.Time
	debt time.Duration
}

// buildTimeline pairs each dispatch (a transition to sending) with the
// transition that ended it, and draws the pair's debt through the sends
// that count at Meta (accepted, or with an unknown outcome) with p.
func buildTimeline(evs []outbox.LaneEvent, p pairlimit.Policy) timeline {
	if p.Interval <= 0 {
		p = pairlimit.Meta
	}
	tl := timeline{interval: p.Interval}
	open := map[string]int{} // key -> index in Marks of its dispatch awaiting an outcome
	for _, e := range evs {
		if e.State == outbox.StateSending {
			open[e.Key] = len(tl.Marks)
			tl.Marks = append(tl.Marks, mark{At: e.At, Key: e.Key, Outcome: outbox.StateSending})
			continue
		}
		i, ok := open[e.Key]
		if !ok {
			continue
		}
		delete(open, e.Key)
		m := &tl.Marks[i]
		m.Outcome, m.Code = e.State, e.Code
		m.Refused = e.Code == int(errcodes.PairRateLimit)
	}
	var sends []time.Time
	var counted []int
	for i, m := range tl.Marks {
		switch {
		case m.Refused:
			tl.Refusals++
		case m.Outcome == outbox.StateAccepted || m.Outcome == outbox.StateDelivered || m.Outcome == outbox.StateRead ||
			m.Outcome == outbox.StateSubmittedUnknown || m.Outcome == outbox.StateSending:
			tl.Sends++
			sends = append(sends, m.At)
			counted = append(counted, i)
		default:
			tl.Failures++
		}
	}
	// The debt curve: each counted send adds an interval, repaid at one
	// second per second.
	debt := time.Duration(0)
	var last time.Time
	for j, at := range sends {
		if !last.IsZero() {
			gap := at.Sub(last)
			if gap >= debt {
				if debt > 0 {
					tl.debt = append(tl.debt, debtPoint{last.Add(debt), 0})
				}
				debt = 0
			} else {
				debt -= gap
			}
		}
		tl.debt = append(tl.debt, debtPoint{at, debt})
		debt += p.Interval
		tl.debt = append(tl.debt, debtPoint{at, debt})
		tl.Marks[counted[j]].Debt = debt
		tl.MaxDebt = max(tl.MaxDebt, debt)
		last = at
	}
	// The debt at each refusal, and the burst behind it (pairlimit.Replay
	// judges the refusal against the sends before it).
	for i := range tl.Marks {
		m := &tl.Marks[i]
		if !m.Refused {
			continue
		}
		m.Debt = debtAt(tl.debt, m.At)
		v := pairlimit.Replay(p, append(append([]time.Time(nil), sends...), m.At))
		if last := v[len(v)-1]; !last.Accepted && last.BurstLen > 0 {
			m.BurstStart, m.BurstLen = last.BurstStart, last.BurstLen
			for j, at := range sends {
				if !at.Before(last.BurstStart) && j < len(v)-1 && v[j].Accepted && v[j].BurstStart.Equal(last.BurstStart) {
					m.BurstEnd = at
				}
			}
		}
	}
	if debt > 0 {
		tl.debt = append(tl.debt, debtPoint{last.Add(debt), 0})
	}
	if len(tl.Marks) > 0 {
		tl.From = tl.Marks[0].At
		tl.To = tl.Marks[len(tl.Marks)-1].At
		if n := len(tl.debt); n > 0 && tl.debt[n-1].at.After(tl.To) {
			tl.To = tl.debt[n-1].at
		}
	}
	return tl
}

// debtAt interpolates the debt curve at t.
func debtAt(pts []debtPoint, t time.Time) time.Duration {
	d := time.Duration(0)
	for i, p := range pts {
		if p.at.After(t) {
			if i == 0 {
				return 0
			}
			prev := pts[i-1]
			return max(prev.debt-t.Sub(prev.at), 0)
		}
		d = p.debt
	}
	if len(pts) > 0 {
		return max(d-t.Sub(pts[len(pts)-1].at), 0)
	}
	return 0
}

// Chart geometry (SVG user units).
const (
	chartW   = 960
	chartH   = 300
	padL     = 56
	padR     = 16
	padT     = 16
	debtH    = 190 // the debt plot's height
	marksY   = 250 // the row of dispatches
	axisY    = padT + debtH
	plotW    = chartW - padL - padR
	dotR     = 5
	tickFont = 11
)

// svg draws the timeline: the pair's debt as an area above, the
// dispatches below (green: counted at Meta; red with its code: a 131056;
// grey: failed otherwise), on one time axis.
func (tl timeline) svg() string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" viewBox="0 0 %d %d" role="img" aria-label="pair timeline" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH)
	if len(tl.Marks) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="empty">No dispatch of this pair in the last 24 hours.</text></svg>`, chartW/2, chartH/2)
		return b.String()
	}
	span := tl.To.Sub(tl.From)
	if span <= 0 {
		span = time.Second
	}
	from := tl.From.Add(-span / 20)
	span += span / 10
	x := func(t time.Time) float64 { return padL + float64(t.Sub(from))/float64(span)*plotW }
	maxDebt := niceCeil(max(tl.MaxDebt, tl.interval))
	y := func(d time.Duration) float64 { return padT + debtH - float64(d)/float64(maxDebt)*debtH }

	// Axes and grid.
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padL, axisY, chartW-padR, axisY)
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padL, padT, padL, axisY)
	lines := gridLines(maxDebt)
	for i := 1; i <= lines; i++ {
		d := maxDebt * time.Duration(i) / time.Duration(lines)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, padL, y(d), chartW-padR, y(d))
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, y(d)+4, html.EscapeString(shortDur(d)))
	}
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">0</text>`, padL-6, axisY+4)
	fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="end">pair debt</text>`, chartW-padR-6, padT+12)
	layout := "15:04:05"
	if span < time.Minute {
		layout = "15:04:05.000"
	}
	for i := 0; i <= 5; i++ {
		t := from.Add(span * time.Duration(i) / 5)
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 5:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x(t), chartH-6, anchor, html.EscapeString(t.UTC().Format(layout)))
	}

	// The debt area.
	if len(tl.debt) > 0 {
		var pts strings.Builder
		fmt.Fprintf(&pts, "%.1f,%.1f ", x(tl.debt[0].at), y(0))
		for _, p := range tl.debt {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(p.at), y(p.debt))
		}
		fmt.Fprintf(&pts, "%.1f,%.1f", x(tl.debt[len(tl.debt)-1].at), y(0))
		fmt.Fprintf(&b, `<polygon class="debt" points="%s"/>`, pts.String())
	}

	// The bursts behind the refusals, under the dispatches.
	for _, m := range tl.Marks {
		if !m.Refused || m.BurstLen == 0 {
			continue
		}
		x0, x1 := x(m.BurstStart)-dotR-3, x(m.BurstEnd)+dotR+3
		fmt.Fprintf(&b, `<g class="burst"><rect x="%.1f" y="%d" width="%.1f" height="%d" rx="4"/>`, x0, marksY-dotR-5, x1-x0, 2*dotR+10)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">burst of %d</text></g>`, x0, marksY+dotR+20, m.BurstLen)
	}

	// The dispatches.
	fmt.Fprintf(&b, `<line class="row" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padL, marksY, chartW-padR, marksY)
	fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="end">sends</text>`, padL-6, marksY+4)
	for _, m := range tl.Marks {
		cx := x(m.At)
		title := html.EscapeString(fmt.Sprintf("%s  %s  %s", m.At.UTC().Format("15:04:05.000"), m.Key, m.Outcome))
		switch {
		case m.Refused:
			fmt.Fprintf(&b, `<g class="refusal"><line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, cx, padT, cx, marksY)
			fmt.Fprintf(&b, `<path d="M%.1f,%d l7,12 h-14 z"><title>%s: 131056 (the pair owed %s)</title></path>`, cx, marksY-6, title, shortDur(m.Debt))
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%d</text>`, cx+6, padT+14, m.Code)
			fmt.Fprintf(&b, `<text class="owed" x="%.1f" y="%d">the pair owed %s</text></g>`, cx+6, padT+28, html.EscapeString(shortDur(m.Debt)))
		case tl.counts(m):
			fmt.Fprintf(&b, `<circle class="send" cx="%.1f" cy="%d" r="%d"><title>%s</title></circle>`, cx, marksY, dotR, title)
		default:
			fmt.Fprintf(&b, `<rect class="failure" x="%.1f" y="%d" width="%d" height="%d"><title>%s (code %d)</title></rect>`, cx-dotR, marksY-dotR, 2*dotR, 2*dotR, title, m.Code)
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func (tl timeline) counts(m mark) bool {
	switch m.Outcome {
	case outbox.StateAccepted, outbox.StateDelivered, outbox.StateRead, outbox.StateSubmittedUnknown, outbox.StateSending:
		return true
	}
	return false
}

// niceCeil rounds d up to 1, 2 or 5 times a power of ten seconds (or of
// ten milliseconds below a second), for the debt axis.
func niceCeil(d time.Duration) time.Duration {
	unit := 10 * time.Millisecond
	for unit*10 <= d {
		unit *= 10
	}
	for _, k := range []time.Duration{1, 2, 5, 10} {
		if unit*k >= d {
			return unit * k
		}
	}
	return unit * 10
}

// gridLines is how many equal steps divide a niceCeil figure into round
// ones: 5 for 1 or 5 times a power of ten, 4 for 2.
func gridLines(d time.Duration) int {
	for d >= 10 && d%10 == 0 {
		d /= 10
	}
	if d == 2 {
		return 4
	}
	return 5
}

func shortDur(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Round(time.Millisecond).String()
	}
}

// trendSVG draws the transitions into queued, accepted and dead-letter
// states per step as grouped bars.
func trendSVG(pts []outbox.TrendPoint) template.HTML {
	const w, h, pad = 960, 140, 24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="trend" viewBox="0 0 %d %d" role="img" aria-label="trend" xmlns="http://www.w3.org/2000/svg">`, w, h)
	maxN := 1
	for _, p := range pts {
		maxN = max(maxN, p.Entered[outbox.StateQueued], p.Entered[outbox.StateAccepted],
			p.Entered[outbox.StateFailed]+p.Entered[outbox.StateExpired]+p.Entered[outbox.StateSubmittedUnknown])
	}
	if len(pts) > 0 {
		slot := float64(w-2*pad) / float64(len(pts))
		bw := slot / 4
		for i, p := range pts {
			x0 := pad + float64(i)*slot
			bars := []struct {
				class string
				n     int
			}{{"q", p.Entered[outbox.StateQueued]}, {"a", p.Entered[outbox.StateAccepted]},
				{"d", p.Entered[outbox.StateFailed] + p.Entered[outbox.StateExpired] + p.Entered[outbox.StateSubmittedUnknown]}}
			for j, bar := range bars {
				bh := float64(bar.n) / float64(maxN) * float64(h-2*pad)
				fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %d</title></rect>`,
					bar.class, x0+float64(j)*bw+bw/2, float64(h-pad)-bh, bw, bh, p.At.UTC().Format("15:04"), bar.n)
			}
		}
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d">%s</text>`, pad, h-6, pts[0].At.UTC().Format("15:04"))
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">now</text>`, w-pad, h-6)
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d">max %d per hour</text>`, pad, pad-8, maxN)
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, pad, h-pad, w-pad, h-pad)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
