package framing

import (
	"bytes"
	"hash/crc32"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestCRC32CKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint32
	}{
		{"", 0},
		{"123456789", 0xE3069283},
		{"a", 0xC1D04330},
		{string(make([]byte, 32)), 0x8A9136AA}, // RFC 3720 B.4: 32 zero bytes
		{string(bytes.Repeat([]byte{0xff}, 32)), 0x62A8AB43},
	} {
		if got := CRC32C([]byte(tc.in)); got != tc.want {
			t.Errorf("CRC32C(%q) = %08x, want %08x", tc.in, got, tc.want)
		}
	}
	if got := UpdateCRC32C(CRC32C([]byte("1234")), []byte("56789")); got != 0xE3069283 {
		t.Errorf("UpdateCRC32C = %08x, want e3069283", got)
	}
}

func TestCombineCRC32CRandomSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for range 500 {
		n := r.IntN(len(data) + 1)
		if r.IntN(4) == 0 {
			n = r.IntN(64)
		}
		cut := r.IntN(n + 1)
		a, b := data[:cut], data[cut:n]
		got := CombineCRC32C(CRC32C(a), CRC32C(b), int64(len(b)))
		if want := CRC32C(data[:n]); got != want {
			t.Fatalf("combine at %d of %d = %08x, want %08x", cut, n, got, want)
		}
	}
}

func TestCombineCRC32CManyPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 300_001)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	var crc uint32
	for pos := 0; pos < len(data); {
		n := min(1+r.IntN(5000), len(data)-pos)
		crc = CombineCRC32C(crc, CRC32C(data[pos:pos+n]), int64(n))
		pos += n
	}
	if want := CRC32C(data); crc != want {
		t.Fatalf("piecewise = %08x, want %08x", crc, want)
	}
}

func TestCombineCRC32CHugeLengths(t *testing.T) {
	// Lengths too big to compute directly: check associativity
	// (A||B)||C == A||(B||C) with B a run of zeros built by doubling.
	zeros := CRC32C(make([]byte, 4096))
	z := zeros
	n := int64(4096)
	for n < 1<<40 {
		z = CombineCRC32C(z, z, n)
		n *= 2
	}
	// z is the CRC of 2^40 zero bytes; cross-check with doubling from a
	// different start size.
	z2, n2 := CRC32C(make([]byte, 1<<14)), int64(1<<14)
	for n2 < 1<<40 {
		z2 = CombineCRC32C(z2, z2, n2)
		n2 *= 2
	}
	if z != z2 {
		t.Fatalf("2^40 zeros: %08x vs %08x", z, z2)
	}
	a, c := CRC32C([]byte("head")), CRC32C([]byte("tail"))
	left := CombineCRC32C(CombineCRC32C(a, z, n), c, 4)
	right := CombineCRC32C(a, CombineCRC32C(z, c, 4), n+4)
	if left != right {
		t.Fatalf("associativity: %08x vs %08x", left, right)
	}
	if got := CombineCRC32C(a, 0, 0); got != a {
		t.Fatalf("combine with empty = %08x, want %08x", got, a)
	}
}

func BenchmarkCRC32C(b *testing.B) {
	for _, size := range []int{32, 4 << 10, 256 << 10} {
		buf := make([]byte, size)
		b.Run(byteSize(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				CRC32C(buf)
			}
		})
	}
}

func BenchmarkCombineCRC32C(b *testing.B) {
	for b.Loop() {
		CombineCRC32C(0x12345678, 0x9abcdef0, 256<<10)
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}

func TestZerosCRC32C(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 4096, 65535, 1 << 20, 1<<20 + 17, 3 << 20} {
		want := crc32.Checksum(make([]byte, n), crc32.MakeTable(crc32.Castagnoli))
		if got := ZerosCRC32C(int64(n)); got != want {
			t.Errorf("ZerosCRC32C(%d) = %08x, want %08x", n, got, want)
		}
	}
	// Known answer: CRC-32C of 32 zero bytes (RFC 3720, B.4).
	if got := ZerosCRC32C(32); got != 0x8a9136aa {
		t.Errorf("ZerosCRC32C(32) = %08x, want 8a9136aa", got)
	}
}
