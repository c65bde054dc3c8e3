package throughput_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapace/wapace/errcodes"
	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/usage"
)

func TestParseUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header string
		want   []usage.Usage
	}{
		{"empty", "", nil},
		{"one entry", `{"102290129340398":[{"type":"whatsapp_business_management","call_count":28,"total_cputime":25,"total_time":25,"estimated_time_to_regain_access":0}]}`,
			[]usage.Usage{{BusinessID: "102290129340398", Type: "whatsapp_business_management", CallCount: 28, TotalCPUTime: 25, TotalTime: 25}}},
		{"throttled", `{"1":[{"type":"whatsapp_business_messaging","call_count":100,"total_cputime":3,"total_time":4,"estimated_time_to_regain_access":12}]}`,
			[]usage.Usage{{BusinessID: "1", Type: "whatsapp_business_messaging", CallCount: 100, TotalCPUTime: 3, TotalTime: 4, RegainAccess: 12 * time.Minute}}},
		{"two businesses sorted", `{"b":[{"type":"x","call_count":1}],"a":[{"type":"y","total_time":2.5},{"type":"x"}]}`,
			[]usage.Usage{{BusinessID: "a", Type: "x"}, {BusinessID: "a", Type: "y", TotalTime: 3}, {BusinessID: "b", Type: "x", CallCount: 1}}},
		{"null fields", `{"1":[{"type":null,"call_count":null}]}`, []usage.Usage{{BusinessID: "1"}}},
		{"huge regain clamped", `{"1":[{"type":"x","estimated_time_to_regain_access":1e300}]}`,
			[]usage.Usage{{BusinessID: "1", Type: "x", RegainAccess: 7 * 24 * time.Hour}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := usage.Parse(tt.header)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseUsage (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"{", "[]", `{"1":{}}`, `{"1":[{"call_count":"high"}]}`, `{"1":[{"call_count":-1}]}`, `{"1":[{"type":5}]}`, "null", `"x"`} {
		if _, err := usage.Parse(bad); !errors.Is(err, usage.ErrMalformed) {
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
		us, err := usage.Parse(header)
		if err != nil {
			if !errors.Is(err, usage.ErrMalformed) || us != nil {
				t.Fatalf("ParseUsage = %v, %v", us, err)
			}
			return
		}
		for _, u := range us {
			if u.CallCount < 0 || u.TotalTime < 0 || u.TotalCPUTime < 0 || u.RegainAccess < 0 || u.RegainAccess > 7*24*time.Hour {
				t.Fatalf("out of range entry %+v", u)
			}
		}
		b := throughput.NewBudget(200)
		if d := b.Observe(t0, us); d < 0 {
			t.Fatalf("Observe = %v", d)
		}
	})
}

func TestBudget(t *testing.T) {
	t.Parallel()
	b := throughput.NewBudget(200)
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

	b = throughput.NewBudget(5_000)
	const mgmt = usage.TypeManagement
	if d := b.Observe(t0, []usage.Usage{{Type: mgmt, CallCount: 40}}); d != 0 || budgetAllow(b, t0, 1) == false {
		t.Errorf("Observe(40%%) held %v", d)
	}
	if d := b.Observe(t0, []usage.Usage{{Type: mgmt, CallCount: 100}}); d != time.Minute {
		t.Errorf("Observe(100%%) = %v, want 1m", d)
	}
	if d := b.Observe(t0, []usage.Usage{{Type: mgmt, TotalTime: 20, RegainAccess: 7 * time.Minute}}); d != 7*time.Minute {
		t.Errorf("Observe(regain 7m) = %v", d)
	}
	if budgetAllow(b, t0.Add(6*time.Minute), 1) || !b.HeldUntil().Equal(t0.Add(7*time.Minute)) {
		t.Errorf("not held until +7m: %v", b.HeldUntil())
	}
	if !budgetAllow(b, t0.Add(7*time.Minute), 1) {
		t.Error("still held at +7m")
	}

	b = throughput.NewBudget(0)
	var holds []time.Duration
	for _, c := range []errcodes.Code{errcodes.AppRateLimit, errcodes.WABARateLimit, errcodes.WABAManagementRateLimit} {
		holds = append(holds, budgetRefused(b, t0, c))
	}
	b.Accepted(t0)
	holds = append(holds, budgetRefused(b, t0, errcodes.AppRateLimit), budgetRefused(b, t0, errcodes.PairRateLimit))
	if diff := cmp.Diff([]time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, time.Minute, 0}, holds); diff != "" {
		t.Errorf("holds (-want +got):\n%s", diff)
	}
	if r := b.ReserveN(t0, 1); !r.TimeToAct().Equal(t0.Add(4 * time.Minute)) {
		t.Errorf("reservation during hold acts at %v", r.TimeToAct())
	}
}

// Meta's rate limits (WhatsApp Business Platform, "Rate limits": the API
// call budget of 200 / 5,000 calls per hour per app per WABA concerns the
// management endpoints, /<WABA_ID>, its phone_numbers, message_templates,
// subscribed_apps, assigned_users) and Meta's sample header, which reports
// both "whatsapp_business_management" and "whatsapp" entries for one
// object: only the Budget's own type, and its own object when it knows it,
// may hold it.
func TestBudgetObservesOnlyItsOwnEntries(t *testing.T) {
	t.Parallel()
	full := func(id, typ string, regain time.Duration) usage.Usage {
		return usage.Usage{BusinessID: id, Type: typ, CallCount: 100, RegainAccess: regain}
	}
	tests := []struct {
		name  string
		opts  []throughput.Option
		usage []usage.Usage
		want  time.Duration
	}{
		{"another type at 100 %", nil, []usage.Usage{full("W1", "whatsapp", 0)}, 0},
		{"messaging type throttled", nil, []usage.Usage{full("W1", "whatsapp_business_messaging", 30*time.Minute)}, 0},
		{"no type", nil, []usage.Usage{full("W1", "", 0)}, 0},
		{"management, any object", nil, []usage.Usage{full("W1", usage.TypeManagement, 0)}, time.Minute},
		{"another object", []throughput.Option{throughput.WithBusinessID("W1")},
			[]usage.Usage{full("W2", usage.TypeManagement, 30*time.Minute)}, 0},
		{"own object", []throughput.Option{throughput.WithBusinessID("W1")},
			[]usage.Usage{full("W2", usage.TypeManagement, 30*time.Minute), full("W1", usage.TypeManagement, 5*time.Minute), full("W1", "whatsapp", time.Hour)},
			5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := throughput.NewBudget(5_000, tt.opts...)
			if d := b.Observe(t0, tt.usage); d != tt.want {
				t.Errorf("Observe = %v, want %v", d, tt.want)
			}
			if held := b.HeldUntil().After(t0); held != (tt.want > 0) {
				t.Errorf("HeldUntil = %v", b.HeldUntil())
			}
		})
	}
}

// A usage hold concerns the management calls the Budget paces; only Meta
// refusing calls (4, 613, 80007, 80008) concerns every call of the app and
// WABA, messages included: RefusedUntil tells the two apart.
func TestBudgetRefusedUntil(t *testing.T) {
	t.Parallel()
	b := throughput.NewBudget(5_000)
	b.Observe(t0, []usage.Usage{{Type: usage.TypeManagement, CallCount: 100, RegainAccess: 20 * time.Minute}})
	if !b.RefusedUntil().IsZero() || !b.HeldUntil().Equal(t0.Add(20*time.Minute)) {
		t.Errorf("after a usage hold: RefusedUntil %v, HeldUntil %v", b.RefusedUntil(), b.HeldUntil())
	}
	if d := budgetRefused(b, t0, errcodes.GraphRateLimit); d != time.Minute {
		t.Errorf("Refused(613) = %v, want 1m", d)
	}
	if !b.RefusedUntil().Equal(t0.Add(time.Minute)) || !b.HeldUntil().Equal(t0.Add(20*time.Minute)) {
		t.Errorf("after 613: RefusedUntil %v, HeldUntil %v", b.RefusedUntil(), b.HeldUntil())
	}
	var zero throughput.Budget
	if !zero.RefusedUntil().IsZero() {
		t.Error("zero Budget refused")
	}
}

func TestSelectUsage(t *testing.T) {
	t.Parallel()
	all := []usage.Usage{
		{BusinessID: "W1", Type: usage.TypeManagement, CallCount: 1},
		{BusinessID: "W1", Type: "whatsapp", CallCount: 2},
		{BusinessID: "W2", Type: usage.TypeManagement, CallCount: 3},
	}
	tests := []struct {
		id, typ string
		want    []int
	}{
		{"W1", usage.TypeManagement, []int{1}},
		{"", usage.TypeManagement, []int{1, 3}},
		{"W1", "", []int{1, 2}},
		{"", "", []int{1, 2, 3}},
		{"W3", "", nil},
	}
	for _, tt := range tests {
		var got []int
		for _, u := range usage.Select(all, tt.id, tt.typ) {
			got = append(got, u.CallCount)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("SelectUsage(%q, %q) (-want +got):\n%s", tt.id, tt.typ, diff)
		}
	}
	if len(all) != 3 || all[1].CallCount != 2 {
		t.Error("SelectUsage changed its input")
	}
}

// budgetAllow reports whether n calls may be made at t without waiting,
// and if so records them, as an AllowN would: it reserves, and gives back
// at once a reservation that would have to wait.
func budgetAllow(b *throughput.Budget, t time.Time, n int) bool {
	r := b.ReserveN(t, n)
	if r.OK() && r.DelayFrom(t) == 0 {
		return true
	}
	r.CancelAt(t)
	return false
}
