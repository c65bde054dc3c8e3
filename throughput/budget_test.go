package throughput_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
)

func TestParseUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header string
		want   []throughput.Usage
	}{
		{"empty", "", nil},
		{"one entry", `{"102290129340398":[{"type":"whatsapp_business_management","call_count":28,"total_cputime":25,"total_time":25,"estimated_time_to_regain_access":0}]}`,
			[]throughput.Usage{{BusinessID: "102290129340398", Type: "whatsapp_business_management", CallCount: 28, TotalCPUTime: 25, TotalTime: 25}}},
		{"throttled", `{"1":[{"type":"whatsapp_business_messaging","call_count":100,"total_cputime":3,"total_time":4,"estimated_time_to_regain_access":12}]}`,
			[]throughput.Usage{{BusinessID: "1", Type: "whatsapp_business_messaging", CallCount: 100, TotalCPUTime: 3, TotalTime: 4, RegainAccess: 12 * time.Minute}}},
		{"two businesses sorted", `{"b":[{"type":"x","call_count":1}],"a":[{"type":"y","total_time":2.5},{"type":"x"}]}`,
			[]throughput.Usage{{BusinessID: "a", Type: "x"}, {BusinessID: "a", Type: "y", TotalTime: 3}, {BusinessID: "b", Type: "x", CallCount: 1}}},
		{"null fields", `{"1":[{"type":null,"call_count":null}]}`, []throughput.Usage{{BusinessID: "1"}}},
		{"huge regain clamped", `{"1":[{"type":"x","estimated_time_to_regain_access":1e300}]}`,
			[]throughput.Usage{{BusinessID: "1", Type: "x", RegainAccess: 7 * 24 * time.Hour}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := throughput.ParseUsage(tt.header)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseUsage (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"{", "[]", `{"1":{}}`, `{"1":[{"call_count":"high"}]}`, `{"1":[{"call_count":-1}]}`, `{"1":[{"type":5}]}`, "null", `"x"`} {
		if _, err := throughput.ParseUsage(bad); !errors.Is(err, throughput.ErrBadUsage) {
			t.Errorf("ParseUsage(%q) = %v, want ErrBadUsage", bad, err)
		}
	}
}

func FuzzParseUsage(f *testing.F) {
	for _, s := range []string{
		`{"102290129340398":[{"type":"whatsapp_business_management","call_count":28,"total_cputime":25,"total_time":25,"estimated_time_to_regain_access":0}]}`,
		`{"1":[{"type":"x","call_count":100,"estimated_time_to_regain_access":5}]}`, "", "{}", "[]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		us, err := throughput.ParseUsage(header)
		if err != nil {
			if !errors.Is(err, throughput.ErrBadUsage) || us != nil {
				t.Fatalf("ParseUsage = %v, %v", us, err)
			}
			return
		}
		for _, u := range us {
			if u.CallCount < 0 || u.TotalTime < 0 || u.TotalCPUTime < 0 || u.RegainAccess < 0 || u.RegainAccess > 7*24*time.Hour {
				t.Fatalf("out of range entry %+v", u)
			}
		}
		b := throughput.NewBudget(throughput.BudgetDefault)
		if d := b.Observe(t0, us); d < 0 {
			t.Fatalf("Observe = %v", d)
		}
	})
}

func TestBudget(t *testing.T) {
	t.Parallel()
	b := throughput.NewBudget(throughput.BudgetDefault)
	// Never more than 200 calls in any hour, sustained at least 90 %.
	var at []time.Time
	for range 2000 {
		at = append(at, b.ReserveN(t0, 1).TimeToAct())
	}
	if got := maxInWindow(at, time.Hour); got > 200 {
		t.Errorf("an hour admitted %d calls, budget 200", got)
	}
	if hours := at[len(at)-1].Sub(at[0]).Hours(); float64(len(at)-1)/hours < 180 {
		t.Errorf("sustained %.1f calls/h", float64(len(at)-1)/hours)
	}

	b = throughput.NewBudget(throughput.BudgetActiveWABA)
	if d := b.Observe(t0, []throughput.Usage{{CallCount: 40}}); d != 0 || b.AllowN(t0, 1) == false {
		t.Errorf("Observe(40%%) held %v", d)
	}
	if d := b.Observe(t0, []throughput.Usage{{CallCount: 100}}); d != time.Minute {
		t.Errorf("Observe(100%%) = %v, want 1m", d)
	}
	if d := b.Observe(t0, []throughput.Usage{{TotalTime: 20, RegainAccess: 7 * time.Minute}}); d != 7*time.Minute {
		t.Errorf("Observe(regain 7m) = %v", d)
	}
	if b.AllowN(t0.Add(6*time.Minute), 1) || !b.HeldUntil().Equal(t0.Add(7*time.Minute)) {
		t.Errorf("not held until +7m: %v", b.HeldUntil())
	}
	if !b.AllowN(t0.Add(7*time.Minute), 1) {
		t.Error("still held at +7m")
	}

	b = throughput.NewBudget(0)
	var holds []time.Duration
	for _, c := range []errcodes.Code{errcodes.AppRateLimit, errcodes.WABARateLimit, errcodes.WABAManagementRateLimit} {
		holds = append(holds, b.Refused(t0, c))
	}
	b.Accepted(t0)
	holds = append(holds, b.Refused(t0, errcodes.AppRateLimit), b.Refused(t0, errcodes.PairRateLimit))
	if diff := cmp.Diff([]time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, time.Minute, 0}, holds); diff != "" {
		t.Errorf("holds (-want +got):\n%s", diff)
	}
	if r := b.ReserveN(t0, 1); !r.TimeToAct().Equal(t0.Add(4 * time.Minute)) {
		t.Errorf("reservation during hold acts at %v", r.TimeToAct())
	}
}
