package datachan

import (
	"math/rand/v2"
	"testing"

	"kerf/framing"
)

func TestSpansShuffledBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	data := make([]byte, 200_000)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	const base = 1000 // the expected range need not start at 0
	for trial := range 50 {
		type blk struct{ off, end int }
		var blocks []blk
		for pos := 0; pos < len(data); {
			n := min(1+r.IntN(9000), len(data)-pos)
			blocks = append(blocks, blk{pos, pos + n})
			pos += n
		}
		r.Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
		var ss spans
		for k, b := range blocks {
			crc := framing.CRC32C(data[b.off:b.end])
			if dup, err := ss.add(uint64(base+b.off), uint64(base+b.end), crc); dup || err != nil {
				t.Fatalf("trial %d: add %v: dup=%v err=%v", trial, b, dup, err)
			}
			// Re-adding any earlier block is a duplicate.
			old := blocks[r.IntN(k+1)]
			if dup, err := ss.add(uint64(base+old.off), uint64(base+old.end), 0); !dup || err != nil {
				t.Fatalf("trial %d: re-add %v: dup=%v err=%v", trial, old, dup, err)
			}
		}
		if len(ss) != 1 || ss[0].start != base || ss[0].end != base+uint64(len(data)) {
			t.Fatalf("trial %d: spans %v", trial, ss)
		}
		if want := framing.CRC32C(data); ss[0].crc != want {
			t.Fatalf("trial %d: crc %08x, want %08x", trial, ss[0].crc, want)
		}
	}
}

func TestSpansPartialOverlap(t *testing.T) {
	var ss spans
	ss.add(100, 200, 0)
	ss.add(300, 400, 0)
	for _, r := range [][2]uint64{{150, 250}, {50, 150}, {250, 350}, {199, 301}, {50, 450}} {
		if _, err := ss.add(r[0], r[1], 0); err == nil {
			t.Errorf("add %v: no error", r)
		}
	}
	for _, r := range [][2]uint64{{100, 200}, {120, 130}, {300, 400}} {
		if dup, err := ss.add(r[0], r[1], 0); !dup || err != nil {
			t.Errorf("add %v: dup=%v err=%v", r, dup, err)
		}
	}
	if dup, err := ss.add(200, 300, 0); dup || err != nil || len(ss) != 1 {
		t.Fatalf("filling the gap: dup=%v err=%v spans=%v", dup, err, ss)
	}
}
