package framing

import (
	"errors"
	"fmt"
	"strconv"
)

// KeptRange is a range [Off, End) of a file that a resuming receiver
// holds past its gap-free prefix, with the CRC-32C of its bytes: blocks
// that came over the other data connections after one stalled or was
// lost. A kerf receiver lists them in the ACK to a recovery's A (one
// 'k' field each, docs/protocol.md §6) and the sender sends only what
// lies between them.
type KeptRange struct {
	Off, End int64
	CRC      uint32
}

// AttrKept is the tag of a kept-range field in the ACK to an A packet.
const AttrKept = 'k'

// ErrBadKeptRange wraps every error of ParseKeptRange.
var ErrBadKeptRange = errors.New("framing: bad kept range")

// maxKeptValue is the longest value a field may carry: its length is one
// tochar'ed count.
const maxKeptValue = 94

// AppendKeptRange appends r as a 'k' field: 'k', tochar(len), then
// "OFF-END:CRC" in lowercase hex. Its value is at most 42 characters.
func AppendKeptRange(b []byte, r KeptRange) []byte {
	var v [48]byte
	val := strconv.AppendUint(v[:0], uint64(r.Off), 16)
	val = append(val, '-')
	val = strconv.AppendUint(val, uint64(r.End), 16)
	val = append(val, ':')
	val = strconv.AppendUint(val, uint64(r.CRC), 16)
	b = append(b, AttrKept, kchar(len(val)))
	return append(b, val...)
}

// KeptRangeLen is the most bytes AppendKeptRange adds.
const KeptRangeLen = 2 + 16 + 1 + 16 + 1 + 8

// ParseKeptRange decodes the value of a 'k' field. Offsets are
// non-negative, the range is not empty, and every number is hex that
// fits its type; anything else is an error wrapping ErrBadKeptRange.
func ParseKeptRange(v []byte) (KeptRange, error) {
	bad := func(why string) (KeptRange, error) {
		return KeptRange{}, fmt.Errorf("%w: %q: %s", ErrBadKeptRange, v, why)
	}
	if len(v) > maxKeptValue {
		return bad("too long")
	}
	dash, colon := -1, -1
	for i, c := range v {
		switch c {
		case '-':
			if dash >= 0 || colon >= 0 {
				return bad("misplaced '-'")
			}
			dash = i
		case ':':
			if dash < 0 || colon >= 0 {
				return bad("misplaced ':'")
			}
			colon = i
		}
	}
	if dash < 0 || colon < 0 {
		return bad("want OFF-END:CRC")
	}
	off, ok1 := parseHex(v[:dash], 63)
	end, ok2 := parseHex(v[dash+1:colon], 63)
	crc, ok3 := parseHex(v[colon+1:], 32)
	if !ok1 || !ok2 || !ok3 {
		return bad("not hex numbers in range")
	}
	if end <= off {
		return bad("empty range")
	}
	return KeptRange{Off: int64(off), End: int64(end), CRC: uint32(crc)}, nil
}

// parseHex parses 1-16 hex digits (either case) into a value below
// 2^bits; no sign, no prefix.
func parseHex(s []byte, bits int) (uint64, bool) {
	if len(s) == 0 || len(s) > 16 {
		return 0, false
	}
	var x uint64
	for _, c := range s {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		x = x<<4 | uint64(d)
	}
	return x, x>>bits == 0
}
