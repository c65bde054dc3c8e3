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
	"syscall"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
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
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWriteCheckInterleaved measures the write-time check's cost per
// message: BenchmarkSendClientOnly's send path (1,000 numbers, no rate
// binding), with the check off and on, alternated in one process (off, on,
// off, on, ...: 9 pairs of 20,000 sends each per iteration), as CPU time
// (user + system) per send. It reports the medians and the median, least
// and greatest ratio on/off of the pairs; the goal is a ratio within 1.05.
// Run it with -benchtime 1x.
func BenchmarkWriteCheckInterleaved(b *testing.B) {
	const pairs, sends = 9, 20_000
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
	round := func(on bool) time.Duration {
		cloudapi.SetPaceWrites(on)
		msgs := make([]cloudapi.Message, sends)
		for i := range msgs {
			msgs[i] = cloudapi.Text(fmt.Sprintf("+2376%08d", next), "hello")
			next++
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mallocs := ms.Mallocs
		start := cpuTime(b)
		for i, m := range msgs {
			if _, err := c.Send(b.Context(), froms[i%len(froms)], m); err != nil {
				b.Fatal(err)
			}
		}
		cpu := (cpuTime(b) - start) / sends
		runtime.ReadMemStats(&ms)
		if on {
			allocs[1] += ms.Mallocs - mallocs
		} else {
			allocs[0] += ms.Mallocs - mallocs
		}
		return cpu
	}
	var offs, ons, ratios []float64
	b.ResetTimer()
	for range b.N {
		for range pairs {
			off, on := round(false), round(true)
			offs, ons = append(offs, float64(off)), append(ons, float64(on))
			ratios = append(ratios, float64(on)/float64(off))
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
}
