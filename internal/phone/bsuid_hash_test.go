package phone

import "testing"

// SipHash-2-4 against the reference vectors of Aumasson and Bernstein's
// paper ("SipHash: a fast short-input PRF", appendix A, and the reference
// implementation's vectors): key 00 01 .. 0f.
func TestSipHash24Vectors(t *testing.T) {
	t.Parallel()
	const k0, k1 = 0x0706050403020100, 0x0f0e0d0c0b0a0908
	msg := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i)
		}
		return string(b)
	}
	for _, tt := range []struct {
		n    int
		want uint64
	}{
		{0, 0x726fdb47dd0e0e31},
		{15, 0xa129ca6149be45e5},
	} {
		if got := sipHash24(k0, k1, msg(tt.n)); got != tt.want {
			t.Errorf("SipHash-2-4 of %d bytes = %#x, want %#x", tt.n, got, tt.want)
		}
	}
}

// The hashed key of a BSUID is part of the stored format (Redis keys,
// several processes, later versions): these values must never change.
func TestHashedKeysAreStable(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{
		"US.13491208655302741918":     0xe44e179b25ce189d,
		"US.ENT.11815799212886844830": 0xf27bd05216dce33f,
		"BR.1A2B3C4D5E6F7G8H9I0J":     0xe40c7bfd427482d3,
	} {
		r, err := ParseTo(in)
		if err != nil || r.Key() != want {
			t.Errorf("ParseTo(%q) key = %#x, %v; want %#x", in, r.Key(), err, want)
		}
	}
}
