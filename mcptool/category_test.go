package mcptool

import (
	"fmt"
	"testing"
	"time"

	"github.com/wapace/wapace/cloudapi"
)

// TestUnknownCategoryIsAnInvalidMessage: a template the Client cannot
// route (cloudapi.ErrUnknownCategory) is the caller's to fix, not an
// outage to retry.
func TestUnknownCategoryIsAnInvalidMessage(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("send: %w", cloudapi.ErrUnknownCategory)
	te := fromError(err, time.Time{}, "k1", "send_message")
	if te.res.Code != CodeInvalidMessage || te.res.Retryable == nil || *te.res.Retryable || te.res.SendState != string(cloudapi.StateNotSubmitted) {
		t.Errorf("fromError = %+v", te.res)
	}
}
