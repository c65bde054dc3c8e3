package throughputstore

import (
	"testing"
	"time"
)

// TestZeroMemoryStoreNeverPanics: moved from TestZeroValuesNeverPanic when
// the memory store's type was unexported.
func TestZeroMemoryStoreNeverPanics(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var ms memoryStore // the zero value
	_, _, _, _ = ms.Claim(t.Context(), "k", 1, t0, 1, time.Hour)
}
