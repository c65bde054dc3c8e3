package cloudapi

import (
	"testing"

	"github.com/wapace/wapace/errcodes"
)

// decide is the one pure mapping from Meta's answer to a message's state.
func TestDecide(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		code   errcodes.Code
		want   SendState
	}{
		{"pair at 400", 400, errcodes.PairRateLimit, StateRefused},
		{"pair at 429", 429, errcodes.PairRateLimit, StateRefused},
		{"pair at 500", 500, errcodes.PairRateLimit, StateSubmittedUnknown},
		{"pair in a 200", 200, errcodes.PairRateLimit, StateRefused},
		{"throughput at 400", 400, errcodes.ThroughputLimit, StateRefused},
		{"maintenance mode at 503", 503, errcodes.MaintenanceMode, StateRefused},
		{"maintenance at 500", 500, errcodes.Maintenance, StateSubmittedUnknown},
		{"app budget", 400, errcodes.AppRateLimit, StateRefused},
		{"waba budget", 400, errcodes.WABARateLimit, StateRefused},
		{"tier", 400, errcodes.BusinessRateLimit, StateRefused},
		{"marketing limit", 400, errcodes.MarketingLimit, StateFailed},
		{"request error", 400, errcodes.InvalidParameter, StateFailed},
		{"request error at 502", 502, errcodes.InvalidParameter, StateSubmittedUnknown},
		{"something went wrong at 400", 400, errcodes.SomethingWentWrong, StateSubmittedUnknown},
		{"unknown code at 400", 400, 999999, StateFailed},
		{"unknown code at 500", 500, 999999, StateSubmittedUnknown},
		{"token", 401, errcodes.AccessTokenExpired, StateFailed},
	} {
		if got := decide(&errcodes.Error{HTTPStatus: tc.status, Code: tc.code}); got != tc.want {
			t.Errorf("%s: decide = %v, want %v", tc.name, got, tc.want)
		}
	}
}
