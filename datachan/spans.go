package datachan

import (
	"fmt"
	"slices"

	"kerf/framing"
)

// span is a byte range [start, end) of a file that has been received,
// with the CRC-32C of its bytes.
type span struct {
	start, end uint64
	crc        uint32
}

// spans is the set of ranges of one file accepted so far: sorted,
// disjoint and never adjacent (touching ranges are merged, their CRCs
// combined in offset order). Blocks arriving roughly in order keep it at
// a few entries however large the file.
type spans []span

// add records [start, end) with CRC crc. It reports dup if the range was
// already wholly recorded, and an error if it overlaps a recorded range
// only in part (a sender never re-cuts a block).
func (ss *spans) add(start, end uint64, crc uint32) (dup bool, err error) {
	s := *ss
	// i: first span that ends at or after start.
	i := s.firstEndingFrom(start)
	for k := i; k < len(s) && s[k].start < end; k++ {
		if s[k].end > start { // overlaps
			if s[k].start <= start && end <= s[k].end {
				return true, nil
			}
			return false, fmt.Errorf("block [%d,%d) overlaps received [%d,%d) in part", start, end, s[k].start, s[k].end)
		}
	}
	n := int64(end - start)
	switch {
	case i < len(s) && s[i].end == start: // extends s[i]
		s[i].crc = framing.CombineCRC32C(s[i].crc, crc, n)
		s[i].end = end
		if i+1 < len(s) && s[i+1].start == end { // and closes the gap to s[i+1]
			s[i].crc = framing.CombineCRC32C(s[i].crc, s[i+1].crc, int64(s[i+1].end-s[i+1].start))
			s[i].end = s[i+1].end
			s = slices.Delete(s, i+1, i+2)
		}
	case i < len(s) && s[i].start == end: // is just before s[i]
		s[i].crc = framing.CombineCRC32C(crc, s[i].crc, int64(s[i].end-s[i].start))
		s[i].start = start
	default:
		s = slices.Insert(s, i, span{start, end, crc})
	}
	*ss = s
	return false, nil
}

// joins reports whether [start, end) adds no range of its own: it is
// within one recorded, or touches one (add then extends it).
func (ss spans) joins(start, end uint64) bool {
	i := ss.firstEndingFrom(start)
	return i < len(ss) && (ss[i].start <= start && end <= ss[i].end || ss[i].end == start || ss[i].start == end)
}

// firstEndingFrom is the index of the first span that ends at or after
// start (len(ss) if none).
func (ss spans) firstEndingFrom(start uint64) int {
	i, _ := slices.BinarySearchFunc(ss, start, func(x span, start uint64) int {
		if x.end < start {
			return -1
		}
		return 1
	})
	return i
}
