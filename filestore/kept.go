package filestore

import (
	"bytes"
	"strconv"
)

// maxKeptRanges is the most ranges past its prefix a partial keeps for
// a resume; data past the last is cut. A stalled connection leaves about
// as many gaps as it had blocks in flight; each range costs 34 bytes of
// record and 44 of the sender's A-ACK.
const maxKeptRanges = 64

// encodeKept is the value of keptAttr: "PREFIX;OFF-END,OFF-END…" in hex.
func encodeKept(prefix int64, ranges [][2]int64) []byte {
	b := strconv.AppendInt(nil, prefix, 16)
	b = append(b, ';')
	for i, r := range ranges {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, r[0], 16)
		b = append(b, '-')
		b = strconv.AppendInt(b, r[1], 16)
	}
	return b
}

// decodeKept reads encodeKept's value back; ok only if it is well formed
// and its ranges lie past the prefix, sorted, apart and not empty: a
// record that is not is ignored, as none.
func decodeKept(v []byte) (prefix int64, ranges [][2]int64, ok bool) {
	p, rest, found := bytes.Cut(v, []byte{';'})
	if !found {
		return 0, nil, false
	}
	prefix, err := strconv.ParseInt(string(p), 16, 64)
	if err != nil || prefix < 0 {
		return 0, nil, false
	}
	last := prefix
	for len(rest) > 0 && len(ranges) < maxKeptRanges {
		var item []byte
		item, rest, _ = bytes.Cut(rest, []byte{','})
		o, e, found := bytes.Cut(item, []byte{'-'})
		if !found {
			return 0, nil, false
		}
		off, err1 := strconv.ParseInt(string(o), 16, 64)
		end, err2 := strconv.ParseInt(string(e), 16, 64)
		if err1 != nil || err2 != nil || off <= last || end <= off {
			return 0, nil, false
		}
		ranges = append(ranges, [2]int64{off, end})
		last = end
	}
	return prefix, ranges, len(rest) == 0
}
