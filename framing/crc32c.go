package framing

import (
	"hash/crc32"
	"sync"
)

// castagnoliPoly is the CRC-32C (Castagnoli) polynomial, bit-reversed.
const castagnoliPoly = 0x82F63B78

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// CRC32C returns the CRC-32C (Castagnoli) of b. It is the check of every
// data-channel block and the whole-file check the DataPath reports.
func CRC32C(b []byte) uint32 { return updateFolded(0, b) }

// UpdateCRC32C returns the CRC-32C of the bytes whose CRC-32C is crc
// followed by b.
func UpdateCRC32C(crc uint32, b []byte) uint32 { return updateFolded(crc, b) }

// CombineCRC32C returns the CRC-32C of A||B given crcA = CRC32C(A),
// crcB = CRC32C(B) and lenB = len(B), without the data. It costs at most
// 64 GF(2) matrix-vector products whatever lenB is. lenB <= 0 returns crcA.
//
// This is zlib's crc32_combine: appending lenB zero bytes to A multiplies
// its register by x^(8*lenB) mod P, a linear map on 32-bit vectors; the
// pre- and post-inversion of the CRC cancel out, so CRC(A||B) =
// shift(crcA, lenB) ^ crcB.
func CombineCRC32C(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	if crcA == 0 {
		return crcB // the shift is linear: it maps 0 to 0
	}
	ops := zeroBytesOps()
	for k := 0; lenB != 0; k, lenB = k+1, lenB>>1 {
		if lenB&1 != 0 {
			crcA = gf2MatrixTimes(&ops[k], crcA)
		}
	}
	return crcA ^ crcB
}

// gf2Matrix is a linear map on 32-bit vectors over GF(2): column n is the
// image of the vector with only bit n set.
type gf2Matrix [32]uint32

// zeroBytesOps()[k] is the operator that feeds 2^k zero bytes through
// the CRC-32C register. Made on first use: a third of a millisecond of
// every kerf process's start otherwise.
var zeroBytesOps = sync.OnceValue(func() *[64]gf2Matrix {
	ops := new([64]gf2Matrix)
	makeZeroBytesOps(ops)
	return ops
})

func makeZeroBytesOps(ops *[64]gf2Matrix) {
	// One zero bit: the register shifts right, and the polynomial is
	// folded in when bit 0 falls out.
	var oneBit, twoBits, fourBits gf2Matrix
	oneBit[0] = castagnoliPoly
	for n := 1; n < 32; n++ {
		oneBit[n] = 1 << (n - 1)
	}
	gf2MatrixSquare(&twoBits, &oneBit)
	gf2MatrixSquare(&fourBits, &twoBits)
	gf2MatrixSquare(&ops[0], &fourBits) // eight bits: one byte
	for k := 1; k < len(ops); k++ {
		gf2MatrixSquare(&ops[k], &ops[k-1])
	}
}

func gf2MatrixTimes(mat *gf2Matrix, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2MatrixSquare(square, mat *gf2Matrix) {
	for n := range mat {
		square[n] = gf2MatrixTimes(mat, mat[n])
	}
}

// ZerosCRC32C returns the CRC-32C of n zero bytes without the bytes:
// the check a block of zeros (BlockFlagZeros) carries. The register
// starts all ones and zero bytes only shift it, a linear map.
func ZerosCRC32C(n int64) uint32 {
	reg := ^uint32(0)
	ops := zeroBytesOps()
	for k := 0; n > 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			reg = gf2MatrixTimes(&ops[k], reg)
		}
	}
	return ^reg
}
