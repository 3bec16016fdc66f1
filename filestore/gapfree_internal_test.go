package filestore

import (
	"slices"
	"testing"
)

// The gap-free prefix grows only when the ranges before it are in, out of
// order and overlapping (a block sent again) alike, and is recorded each
// time it has grown recordEvery; nothing is recorded before reset, or
// once too many ranges wait past a gap that never fills.
func TestGapFree(t *testing.T) {
	const mib = 1 << 20
	var g gapFree
	var records []int64
	record := func(n int64) { records = append(records, n) }
	g.received(0, mib, record) // before reset: the file's state unknown
	if g.end != 0 || g.recorded() {
		t.Fatalf("before reset: end %d, recorded %v", g.end, g.recorded())
	}
	g.reset(0)
	// Blocks 1..19 of 1 MiB, block 0 last, 5 sent twice.
	for i := int64(1); i < 20; i++ {
		g.received(i*mib, (i+1)*mib, record)
	}
	g.received(5*mib, 6*mib, record)
	if g.end != 0 || records != nil {
		t.Fatalf("with block 0 missing: end %d, records %v", g.end, records)
	}
	g.received(0, mib, record)
	if g.end != 20*mib || !slices.Equal(records, []int64{20 * mib}) || len(g.pending) != 0 {
		t.Fatalf("block 0 in: end %d, records %v, pending %v", g.end, records, g.pending)
	}
	// In order from there: the next record 16 MiB later, at 36 MiB.
	for i := int64(20); i < 40; i++ {
		g.received(i*mib, (i+1)*mib, record)
	}
	if !slices.Equal(records, []int64{20 * mib, 36 * mib}) || !g.recorded() {
		t.Fatalf("records %v, want 20 and 36 MiB", records)
	}
	// Ranges that overlap the prefix and each other, unaligned.
	g.received(40*mib-100, 41*mib+7, record)
	g.received(41*mib, 41*mib+7, record)
	g.received(41*mib+5, 42*mib, record)
	if g.end != 42*mib {
		t.Fatalf("overlapping ranges: end %d, want %d", g.end, 42*mib)
	}
	// A resume's cut starts again from the partial's length, and the
	// first growth past it records.
	g.reset(10 * mib)
	records = nil
	g.received(10*mib, 26*mib, record)
	if !slices.Equal(records, []int64{26 * mib}) {
		t.Fatalf("after reset(10 MiB): records %v, want 26 MiB", records)
	}
	// A gap that never fills: past maxPending ranges, no more records.
	for i := int64(0); i <= maxPending; i++ {
		g.received(27*mib+i*10, 27*mib+i*10+5, record)
	}
	g.received(26*mib, 60*mib, record)
	if len(records) != 1 || g.on {
		t.Fatalf("past maxPending: records %v, on %v", records, g.on)
	}
}
