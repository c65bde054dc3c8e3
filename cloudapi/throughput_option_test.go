package cloudapi_test

import (
	"errors"
	"testing"

	"github.com/wapace/wapace/cloudapi"
	"github.com/wapace/wapace/throughput"
)

// TestThroughputOptionsValidate: a throughput figure or option the
// number's limiter would refuse fails New, matching both packages'
// ErrInvalidOption, instead of a Client whose every send is refused
// (issue 20: options validate, nothing is clamped).
func TestThroughputOptionsValidate(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]cloudapi.Option{
		"above 10,000":            cloudapi.WithThroughput(10_001),
		"headroom above 0.9":      cloudapi.WithThroughput(80, throughput.WithHeadroom(1)),
		"a Budget's option":       cloudapi.WithThroughput(80, throughput.WithBusinessID("waba")),
		"one number above 10,000": cloudapi.WithNumberThroughput("106540352242922", 20_000),
		"negative headroom":       cloudapi.WithThroughput(80, throughput.WithHeadroom(-1)),
	} {
		_, err := cloudapi.New("TOKEN", opt)
		if !errors.Is(err, cloudapi.ErrInvalidOption) || !errors.Is(err, throughput.ErrInvalidOption) {
			t.Errorf("%s: New = %v, want both ErrInvalidOptions", name, err)
		}
	}
	for name, opt := range map[string]cloudapi.Option{
		"10,000":       cloudapi.WithThroughput(10_000),
		"headroom 0.9": cloudapi.WithThroughput(80, throughput.WithHeadroom(0.9)),
		"one number":   cloudapi.WithNumberThroughput("106540352242922", throughput.Upgraded),
	} {
		if _, err := cloudapi.New("TOKEN", opt); err != nil {
			t.Errorf("%s: New = %v", name, err)
		}
	}
}
