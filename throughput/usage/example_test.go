package usage_test

import (
	"fmt"
	"time"

	"github.com/wapace/wapace/throughput"
	"github.com/wapace/wapace/throughput/usage"
)

// Parse a response's header and feed it to the call budget (moved from
// throughput's ExampleParseUsage).
func ExampleParse() {
	header := `{"102290129340398":[{"type":"whatsapp_business_management","call_count":100,"total_cputime":20,"total_time":20,"estimated_time_to_regain_access":12}]}`
	entries, err := usage.Parse(header)
	if err != nil {
		fmt.Println(err)
		return
	}
	b := throughput.NewBudget(200)
	fmt.Println(entries[0].Type, entries[0].MaxPercent(), "% used, hold", b.Observe(time.Now(), entries))
	// Output:
	// whatsapp_business_management 100 % used, hold 12m0s
}
