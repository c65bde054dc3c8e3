//go:build unix

package cloudapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/internal/cputime"
)

// cannedTraced answers as cannedOK does, copies the body as net/http's
// transport does (through an io.LimitReader of the content length, so
// that the body's own WriteTo is not used on either side), and reports
// the write to httptrace as the transport does, so that the write-time check's
// whole path (the check on the body's first read, the observation of the
// write) runs.
type cannedTraced struct{}

func (cannedTraced) RoundTrip(r *http.Request) (*http.Response, error) {
	trace := httptrace.ContextClientTrace(r.Context())
	if trace != nil && trace.GetConn != nil {
		trace.GetConn(r.URL.Host)
	}
	if trace != nil && trace.WroteHeaders != nil {
		trace.WroteHeaders()
	}
	if r.Body != nil {
		// As net/http's transfer writer copies a body of known length.
		if _, err := io.Copy(io.Discard, io.LimitReader(r.Body, r.ContentLength)); err != nil {
			return nil, err
		}
		r.Body.Close()
	}
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Request: r,
		Body: io.NopCloser(strings.NewReader(`{"messaging_product":"whatsapp","contacts":[{"input":"x","wa_id":"1"}],"messages":[{"id":"wamid.B"}]}`))}, nil
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	d := cputime.Self()
	if d == 0 {
		b.Fatal("cannot read the process's CPU time")
	}
	return d
}

// BenchmarkWriteCheckInterleaved measures the write-time check's cost per
// message: BenchmarkSendClientOnly's send path (1,000 numbers, no rate
// binding), with the check off and on, alternated in one process (off, on,
// on, off, off, on, ...: 45 pairs of 4,000 sends each per iteration, so
// that both sides of a pair meet the same load and a drift favours
// neither), as CPU time
// (user + system, GC included: far less sensitive than the wall clock to
// other processes on the machine) and as wall time per send. It reports
// the medians and the median, least and greatest ratio on/off of the
// pairs, for both. It also alternates the check per send (5 rounds of
// 4,000 sends, every other one with the check) and reports the median
// wall time of a send on each side and their ratio (send-ratio): the
// measure least moved by other processes, since a preempted send is an
// outlier the median ignores. The goal is a ratio within 1.05. Run it
// with -benchtime 1x.
func BenchmarkWriteCheckInterleaved(b *testing.B) {
	const pairs, sends = 45, 4_000
	const mps = 10_000 // the most a throughput.Limiter accepts
	c, err := cloudapi.New("BENCH_TOKEN", cloudapi.WithHTTPClient(&http.Client{Transport: cannedTraced{}}), cloudapi.WithThroughput(mps))
	if err != nil {
		b.Fatal(err)
	}
	defer cloudapi.SetPaceWrites(true)
	froms := make([]string, 1000)
	for i := range froms {
		froms[i] = fmt.Sprintf("1065403522%05d", i)
	}
	next := 0
	var allocs [2]uint64 // off, on
	round := func(on bool) (cpu, wall time.Duration) {
		cloudapi.SetPaceWrites(on)
		msgs := make([]cloudapi.Message, sends)
		for i := range msgs {
			msgs[i] = cloudapi.Text(fmt.Sprintf("+2376%08d", next), "hello")
			next++
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mallocs := ms.Mallocs
		start, startWall := cpuTime(b), time.Now()
		for i, m := range msgs {
			if _, err := c.Send(b.Context(), froms[i%len(froms)], m); err != nil {
				b.Fatal(err)
			}
		}
		cpu, wall = (cpuTime(b)-start)/sends, time.Since(startWall)/sends
		runtime.ReadMemStats(&ms)
		if on {
			allocs[1] += ms.Mallocs - mallocs
		} else {
			allocs[0] += ms.Mallocs - mallocs
		}
		return cpu, wall
	}
	// alternate sends the messages with the check on for every other one,
	// and returns each one's wall time: on a loaded machine a send that
	// was not preempted or made to help the GC takes its own time, and
	// the medians compare those. (Each includes one monotonic clock
	// reading, on both sides.)
	alternate := func() (offTimes, onTimes []float64) {
		msgs := make([]cloudapi.Message, sends)
		for i := range msgs {
			msgs[i] = cloudapi.Text(fmt.Sprintf("+2376%08d", next), "hello")
			next++
		}
		base := time.Now()
		last := time.Duration(0)
		for i, m := range msgs {
			on := i%2 == 1
			cloudapi.SetPaceWrites(on)
			if _, err := c.Send(b.Context(), froms[i%len(froms)], m); err != nil {
				b.Fatal(err)
			}
			now := time.Since(base)
			if on {
				onTimes = append(onTimes, float64(now-last))
			} else {
				offTimes = append(offTimes, float64(now-last))
			}
			last = now
		}
		return offTimes, onTimes
	}
	var offs, ons, ratios, wallOffs, wallOns, wallRatios, sendOffs, sendOns []float64
	b.ResetTimer()
	for range b.N {
		for range pairs / 9 {
			off, on := alternate()
			sendOffs, sendOns = append(sendOffs, off...), append(sendOns, on...)
		}
		for i := range pairs {
			var off, on, wallOff, wallOn time.Duration
			if i%2 == 0 {
				off, wallOff = round(false)
				on, wallOn = round(true)
			} else {
				on, wallOn = round(true)
				off, wallOff = round(false)
			}
			offs, ons = append(offs, float64(off)), append(ons, float64(on))
			ratios = append(ratios, float64(on)/float64(off))
			wallOffs, wallOns = append(wallOffs, float64(wallOff)), append(wallOns, float64(wallOn))
			wallRatios = append(wallRatios, float64(wallOn)/float64(wallOff))
		}
	}
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(median(offs)/1e3, "off-µs/send")
	b.ReportMetric(median(ons)/1e3, "on-µs/send")
	b.ReportMetric(float64(allocs[0])/float64(len(offs)*sends), "off-allocs/send")
	b.ReportMetric(float64(allocs[1])/float64(len(ons)*sends), "on-allocs/send")
	b.ReportMetric(median(ratios), "ratio-median")
	b.ReportMetric(slices.Min(ratios), "ratio-min")
	b.ReportMetric(slices.Max(ratios), "ratio-max")
	b.ReportMetric(median(wallOffs)/1e3, "wall-off-µs/send")
	b.ReportMetric(median(wallOns)/1e3, "wall-on-µs/send")
	b.ReportMetric(median(wallRatios), "wall-ratio-median")
	b.ReportMetric(slices.Min(wallRatios), "wall-ratio-min")
	b.ReportMetric(slices.Max(wallRatios), "wall-ratio-max")
	b.ReportMetric(median(sendOffs)/1e3, "send-off-µs")
	b.ReportMetric(median(sendOns)/1e3, "send-on-µs")
	b.ReportMetric(median(sendOns)/median(sendOffs), "send-ratio")
}
