package datachan

import (
	"bytes"
	"slices"
	"testing"

	"kerf/framing"
)

// What an interrupted file kept past its gap-free prefix (AbandonKept)
// is taken as received by the next attempt (ExpectKept): only the gaps
// cross again, and Wait's CRC covers the whole range.
func TestKeptRangesAreNotSentAgain(t *testing.T) {
	ctx := testContext(t)
	const n = 10 << 20
	data := randomData(7, n)
	dst := newMemFile(n)

	// First attempt: the blocks of [3 MiB, 4 MiB) and [6 MiB, 7 MiB)
	// never come (their connection stalled), the rest does.
	s1, r1 := pathPair(t, 2, nil)
	if err := r1.Expect(1, dst, 0, n); err != nil {
		t.Fatal(err)
	}
	for _, g := range [][2]int64{{0, 3 << 20}, {4 << 20, 6 << 20}, {7 << 20, 9 << 20}} {
		if _, err := s1.SendFile(ctx, 1, bytes.NewReader(data), g[0], g[1]-g[0]); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return r1.Stats().BytesReceived == 7<<20 })
	prefix, kept := r1.AbandonKept(1)
	if want := [][2]int64{{4 << 20, 6 << 20}, {7 << 20, 9 << 20}}; prefix != 3<<20 || !slices.Equal(kept, want) {
		t.Fatalf("AbandonKept = %d, %v; want %d, %v", prefix, kept, 3<<20, want)
	}

	// Second attempt, from the prefix, with what was kept.
	s2, r2 := pathPair(t, 2, nil)
	var kr []framing.KeptRange
	for _, k := range kept {
		kr = append(kr, framing.KeptRange{Off: k[0], End: k[1], CRC: framing.CRC32C(dst.bytes()[k[0]:k[1]])})
	}
	if err := r2.ExpectKept(1, dst, prefix, n-prefix, kr); err != nil {
		t.Fatal(err)
	}
	for _, g := range [][2]int64{{3 << 20, 4 << 20}, {6 << 20, 7 << 20}, {9 << 20, n}} {
		if _, err := s2.SendFile(ctx, 1, bytes.NewReader(data), g[0], g[1]-g[0]); err != nil {
			t.Fatal(err)
		}
	}
	crc, err := r2.Wait(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := framing.CRC32C(data[prefix:]); crc != want {
		t.Errorf("Wait's CRC %08x, want %08x (of [%d, %d))", crc, want, prefix, n)
	}
	if !bytes.Equal(dst.bytes(), data) {
		t.Error("the file differs after the second attempt")
	}
	if got := r2.Stats().BytesReceived; got != 3<<20 {
		t.Errorf("second attempt received %d bytes, want %d (the gaps only)", got, 3<<20)
	}
}

// A file whose expected range is all kept is complete at once; kept
// ranges out of order, touching or outside the range are refused.
func TestExpectKeptChecksItsRanges(t *testing.T) {
	ctx := testContext(t)
	_, r := pathPair(t, 1, nil)
	dst := newMemFile(100)
	all := []framing.KeptRange{{Off: 10, End: 50, CRC: 1}, {Off: 50, End: 100, CRC: 2}}
	if err := r.ExpectKept(1, dst, 10, 90, all); err == nil {
		t.Error("touching kept ranges taken")
	}
	if err := r.ExpectKept(2, dst, 10, 90, []framing.KeptRange{{Off: 5, End: 50}}); err == nil {
		t.Error("a kept range before the expected one taken")
	}
	if err := r.ExpectKept(3, dst, 10, 90, []framing.KeptRange{{Off: 60, End: 70}, {Off: 20, End: 30}}); err == nil {
		t.Error("kept ranges out of order taken")
	}
	whole := []framing.KeptRange{{Off: 10, End: 100, CRC: 0xdeadbeef}}
	if err := r.ExpectKept(4, dst, 10, 90, whole); err != nil {
		t.Fatal(err)
	}
	if !r.Ready(4) {
		t.Fatal("a file all kept is not ready")
	}
	if crc, err := r.Wait(ctx, 4); err != nil || crc != 0xdeadbeef {
		t.Errorf("Wait = %08x, %v; want the kept range's CRC", crc, err)
	}
}
