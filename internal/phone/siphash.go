package phone

import "math/bits"

// sipHash24 returns SipHash-2-4 (Aumasson and Bernstein, 2012) of m under
// the 128-bit key (k0, k1), written from the paper's description. It is
// used as a well-mixed, stable hash with a public key, not as a secret MAC.
func sipHash24(k0, k1 uint64, m string) uint64 {
	v0 := k0 ^ 0x736f6d6570736575
	v1 := k1 ^ 0x646f72616e646f6d
	v2 := k0 ^ 0x6c7967656e657261
	v3 := k1 ^ 0x7465646279746573
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13) ^ v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16) ^ v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21) ^ v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17) ^ v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	last := uint64(len(m)) << 56
	for ; len(m) >= 8; m = m[8:] {
		w := uint64(m[0]) | uint64(m[1])<<8 | uint64(m[2])<<16 | uint64(m[3])<<24 |
			uint64(m[4])<<32 | uint64(m[5])<<40 | uint64(m[6])<<48 | uint64(m[7])<<56
		v3 ^= w
		round()
		round()
		v0 ^= w
	}
	for i := len(m) - 1; i >= 0; i-- {
		last |= uint64(m[i]) << (8 * i)
	}
	v3 ^= last
	round()
	round()
	v0 ^= last
	v2 ^= 0xff
	round()
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}
