package framing

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// clmul is a carry-less 64×64 → 128-bit product, in software.
func clmul(a, b uint64) (lo, hi uint64) {
	for i := range 64 {
		if b>>i&1 != 0 {
			lo ^= a << i
			if i > 0 {
				hi ^= a >> (64 - i)
			}
		}
	}
	return lo, hi
}

// foldSoftware does what fold does, one lane at a time in Go: it checks
// the keys and the method independently of the assembly.
func foldSoftware(reg uint32, b []byte, out *[foldBytes]byte) {
	var lanes [foldBytes / 8]uint64
	for i := range lanes {
		lanes[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	lanes[0] ^= uint64(reg)
	for b = b[foldBytes:]; len(b) >= foldBytes; b = b[foldBytes:] {
		for l := 0; l < len(lanes); l += 2 {
			alo, ahi := clmul(lanes[l], foldKeys[0])
			blo, bhi := clmul(lanes[l+1], foldKeys[1])
			lanes[l] = alo ^ blo ^ binary.LittleEndian.Uint64(b[8*l:])
			lanes[l+1] = ahi ^ bhi ^ binary.LittleEndian.Uint64(b[8*l+8:])
		}
	}
	for i, v := range lanes {
		binary.LittleEndian.PutUint64(out[8*i:], v)
	}
}

func TestFoldKeysAndMethod(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{foldBytes, 2 * foldBytes, 3*foldBytes + 17, 64 << 10} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		for _, crc := range []uint32{0, 0xDEADBEEF} {
			m := n &^ (foldBytes - 1)
			var lanes [foldBytes]byte
			foldSoftware(^crc, b[:m], &lanes)
			got := crc32.Update(crc32.Update(0xFFFFFFFF, castagnoliTable, lanes[:]), castagnoliTable, b[m:])
			if want := crc32.Update(crc, castagnoliTable, b); got != want {
				t.Fatalf("n=%d crc=%08x: folded %08x, want %08x", n, crc, got, want)
			}
		}
	}
}

// The assembly folds exactly as the software model does.
func TestFoldMatchesSoftware(t *testing.T) {
	if !canFold {
		t.Skip("this CPU has no VPCLMULQDQ on 512-bit registers; hash/crc32 does all CRCs")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{foldBytes, 2 * foldBytes, 5 * foldBytes, 256 << 10} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		reg := rng.Uint32()
		var got, want [foldBytes]byte
		fold(reg, b, &got)
		foldSoftware(reg, b, &want)
		if got != want {
			t.Fatalf("n=%d: assembly and software folds differ", n)
		}
	}
}

// updateFolded agrees with hash/crc32 at every length around the
// thresholds and boundaries, from any starting CRC and alignment.
func TestUpdateFolded(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 3*foldMin+64)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	lengths := []int{0, 1, 255, 256, foldMin - 1, foldMin, foldMin + 1, foldMin + 255, foldMin + 256, 2*foldMin + 3, 3 * foldMin}
	for _, n := range lengths {
		for _, align := range []int{0, 1, 7, 63} {
			b := buf[align : align+n]
			for _, crc := range []uint32{0, 0xFFFFFFFF, rng.Uint32()} {
				if got, want := updateFolded(crc, b), crc32.Update(crc, castagnoliTable, b); got != want {
					t.Fatalf("n=%d align=%d crc=%08x: %08x, want %08x", n, align, crc, got, want)
				}
			}
		}
	}
}

func FuzzUpdateFolded(f *testing.F) {
	f.Add(uint32(0), []byte("123456789"))
	f.Add(uint32(0xDEADBEEF), make([]byte, foldMin+300))
	f.Fuzz(func(t *testing.T, crc uint32, b []byte) {
		// Short inputs repeat so that the fold itself is exercised.
		for len(b) > 0 && len(b) < foldMin {
			b = append(b, b...)
		}
		if got, want := updateFolded(crc, b), crc32.Update(crc, castagnoliTable, b); got != want {
			t.Fatalf("len %d crc %08x: %08x, want %08x", len(b), crc, got, want)
		}
	})
}

func BenchmarkCRC32CFold(b *testing.B) {
	for _, n := range []int{4 << 10, 16 << 10, 256 << 10} {
		buf := make([]byte, n)
		b.Run("hash-crc32/"+itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32.Update(0, castagnoliTable, buf)
			}
		})
		b.Run("folded/"+itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				updateFolded(0, buf)
			}
		})
	}
}

func itoa(n int) string { return fmt.Sprintf("%dK", n>>10) }

// The folded CRC allocates nothing per call (its 256-byte lanes escaped
// into hash/crc32 once, one allocation for every block checked).
func TestCRC32CAllocatesNothing(t *testing.T) {
	if !canFold {
		t.Log("no VPCLMULQDQ here: this checks hash/crc32's path only")
	}
	b := make([]byte, 64<<10)
	if n := testing.AllocsPerRun(100, func() { CRC32C(b) }); n != 0 {
		t.Fatalf("%v allocations per CRC32C of 64 KiB", n)
	}
}
