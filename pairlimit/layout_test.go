package pairlimit

import (
	"testing"
	"unsafe"
)

// The hot path relies on this layout: a shard's lock line followed by its
// inline table's hot line, shards on cache-line boundaries.
func TestMemoryLayout(t *testing.T) {
	t.Parallel()
	var m memoryStore
	var sh memShard
	if got := unsafe.Sizeof(slot{}); got != 16 {
		t.Errorf("slot is %d bytes, want 16", got)
	}
	if off := unsafe.Offsetof(m.shards); off%64 != 0 {
		t.Errorf("shards start at offset %d, want a multiple of 64", off)
	}
	if size := unsafe.Sizeof(sh); size%64 != 0 {
		t.Errorf("a shard is %d bytes, want a multiple of 64", size)
	}
	if end := unsafe.Offsetof(sh.own) + unsafe.Offsetof(sh.own.passWrote); end != 64 {
		t.Errorf("the lock and the inline table's hot fields end at %d, want 64", end)
	}
}
