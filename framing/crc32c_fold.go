package framing

import (
	"hash/crc32"
	"math/bits"
	"sync"
)

// CRC-32C by carry-less multiplication ("folding", after Gopal et al.,
// "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
// Instruction", Intel, 2009), where the CPU can multiply four 128-bit
// lanes at once (VPCLMULQDQ on 512-bit registers). The SSE4.2 CRC32
// instruction that hash/crc32 uses peaks at about 8 bytes per cycle;
// folding goes several times faster, and the CRC is a tenth of the CPU
// of a plaintext transfer (docs/benchmarks.md).
//
// The message is taken foldBytes at a time into 16 lanes of 128 bits.
// Folding a lane forward by D = 8*foldBytes bits replaces its value L
// with one congruent to L·x^D mod P, and XORs in the lane D bits later;
// the message's value mod P, and so its CRC, is unchanged. What is left,
// the 16 lanes in order, is then an ordinary foldBytes-long message with
// the same CRC (with a zero initial register), which hash/crc32 finishes.
//
// In the reflected bit order of CRC-32C a lane's low 64 bits are its
// higher-degree half: lo stands for x^64·LO(x), hi for HI(x). A
// carry-less product of two reflected 64-bit values is the reflected
// product times x. So the fold is
//
//	L' = clmul(lo, K_lo) ^ clmul(hi, K_hi),
//	K_lo = x^(D+63) mod P,  K_hi = x^(D-1) mod P,
//
// each a polynomial of degree < 32 stored reflected in a 64-bit word
// (coefficient of x^m at bit 63-m), so the products fit in 128 bits.

// foldBytes is how far one fold carries a lane: 4 registers of 4 lanes.
const foldBytes = 256

// foldKeys is [K_lo, K_hi] for D = 8*foldBytes.
var foldKeys = [2]uint64{foldKey(8*foldBytes + 63), foldKey(8*foldBytes - 1)}

// foldKey returns x^n mod P (P the CRC-32C polynomial) stored reflected
// in the high half of a 64-bit word, as the fold multiplies it.
func foldKey(n int) uint64 {
	// CRC-32C's polynomial in normal bit order (crc32.Castagnoli is
	// the reversed form).
	const p = 1<<32 | 0x1EDC6F41
	r := uint64(1)
	for range n {
		r <<= 1
		if r&(1<<32) != 0 {
			r ^= p
		}
	}
	return uint64(bits.Reverse32(uint32(r))) << 32
}

// foldMin is the shortest input worth folding: below it the set-up and
// the 256-byte finish cost more than the CRC32 instruction would.
const foldMin = 4 << 10

// updateFolded returns the CRC-32C of the bytes whose CRC-32C is crc
// followed by b, folding where the CPU allows.
func updateFolded(crc uint32, b []byte) uint32 {
	if !canFold || len(b) < foldMin {
		return crc32.Update(crc, castagnoliTable, b)
	}
	n := len(b) &^ (foldBytes - 1)
	// The lanes escape into crc32.Update: pooled, they cost no allocation.
	lanes := lanesPool.Get().(*[foldBytes]byte)
	fold(^crc, b[:n], lanes)
	// crc32.Update(c, ...) starts its register at ^c: 0xFFFFFFFF starts
	// it at zero, and its result carries straight on into the tail.
	c := crc32.Update(0xFFFFFFFF, castagnoliTable, lanes[:])
	lanesPool.Put(lanes)
	return crc32.Update(c, castagnoliTable, b[n:])
}

var lanesPool = sync.Pool{New: func() any { return new([foldBytes]byte) }}
