package outbox

import (
	"path/filepath"
	"testing"
)

// TestSQLitePragmas checks the settings Open gives the SQLite connection,
// read back from SQLite itself: a pragma the driver did not apply (a typo
// in its name, a value out of range) is silently ignored by SQLite.
func TestSQLitePragmas(t *testing.T) {
	o, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	want := []struct {
		pragma string
		value  string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "1"}, // NORMAL
		{"foreign_keys", "1"},
		{"temp_store", "2"}, // MEMORY
		{"cache_size", "-16384"},
		{"mmap_size", "134217728"},
		{"wal_autocheckpoint", "4000"}, // a bound: Run checkpoints on its own connection (checkpoint.go)
	}
	for _, w := range want {
		var got string
		if err := o.DB().QueryRowContext(t.Context(), "PRAGMA "+w.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", w.pragma, err)
		}
		if got != w.value {
			t.Errorf("PRAGMA %s = %s, want %s", w.pragma, got, w.value)
		}
	}
}
