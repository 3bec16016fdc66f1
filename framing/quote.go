package framing

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
)

// Quoting is the negotiated prefixing for data fields.
//
// Encoding of one byte (gkermit.c encode(), ckcfns.c getpkt()), in order:
// a run of 3..94 equal bytes (2 when that is shorter) becomes REPT
// tochar(count) and one encoded copy; a byte with bit 8 set becomes QBIN
// and its 7-bit value when QBIN is active; a control byte whose wire form
// (after that) is not Bare becomes QCTL and the byte XOR 64; a byte whose
// low 7 bits equal QCTL, QBIN (when active) or REPT (when active) is
// preceded by QCTL. Decoding reverses this: after QCTL a character whose
// low 7 bits are in 63..95 is XORed with 64, any other is taken literally.
//
// Whatever Bare says, NUL, SOH, CR and their 8-bit twins 0x80, 0x81, 0x8D
// are always prefixed:
//   - SOH is the packet MARK. Receivers restart a packet when they see it
//     (C-Kermit's ttinl() even matches it with the 8th bit stripped, so
//     0x81 counts too), and so does ParsePacket.
//   - CR is the packet terminator. C-Kermit's ttinl() always ends a
//     packet at the EOL character, and Telnet NVT rules mangle bare CR.
//   - NUL: C-Kermit, when windowing, stashes out-of-order packets and later
//     recovers their length with strlen() (ckcfn2.c input(), "return
//     pre-stashed packet"), so a bare NUL silently truncates the data.
//     NUL is also eaten by many terminal drivers and Telnet stacks.
//
// C-Kermit itself prefixes NUL, SOH, 0x81, CR, 0x8D and 255 in every mode
// except SET PREFIXING NONE (ckcmai.c setprefix()); it sends 0x80 bare in
// CAUTIOUS mode, which kerf does not copy. Use Protect for a MARK other
// than SOH and for a peer's EOL other than CR.
type Quoting struct {
	QCTL byte // control prefix, normally '#'; 0 means '#'
	QBIN byte // 8th-bit prefix; 0 = none (8-bit clean link)
	REPT byte // repeat prefix; 0 = none
	// Bare marks control bytes (0..31, 127, 128..159, 255) that may be sent
	// unprefixed. The zero value prefixes all of them, the safe choice.
	Bare [256]bool
	// LengthFramed says the receiver frames packets by length alone, keeps
	// explicit lengths and matches prefix characters exactly (kerf does):
	// then only the MARK (SOH) is forced to be prefixed, NUL, CR, 0x80,
	// 0x81 and 0x8D follow Bare, and the prefixes' 8-bit twins go bare.
	LengthFramed bool
}

// ErrBadQuoting is returned, wrapped with detail, by Decode for a data
// field that is not a valid prefix encoding.
var ErrBadQuoting = errors.New("framing: bad prefix encoding")

// cautiousPrefixed is C-Kermit's SET PREFIXING CAUTIOUS list (the default;
// ckcmai.c setprefix(), MARK SOH and EOL CR): the control bytes it still
// prefixes. OBSERVED identical in a C-Kermit 10.0 Beta.08 transfer of all
// 256 byte values.
var cautiousPrefixed = [...]byte{
	0, 1, 3, 4, 10, 13, 14, 15, 16, 17, 19, 21, 24, 25, 26, 28, 29, 30,
	129, 131, 132, 138, 141, 144, 145, 147, 149, 154, 156, 157, 158, 255,
}

// CautiousBare returns C-Kermit's "cautious" unprefixing set: every
// control byte bare except those that terminals, flow control or packet
// framing may eat (NUL, SOH, CR, XON/XOFF, ^C, DLE, ... and their +128).
//
// It is C-Kermit's list exactly, so 0x80 is bare in it; Encode prefixes
// 0x80 anyway (see Quoting).
func CautiousBare() [256]bool {
	var b [256]bool
	for c := range 256 {
		b[c] = isControl(byte(c))
	}
	for _, c := range cautiousPrefixed {
		b[c] = false
	}
	return b
}

// isControl reports whether c is one of the bytes Bare applies to:
// 0..31, 127, 128..159, 255.
func isControl(c byte) bool {
	c &= 0x7F
	return c < ' ' || c == 0x7F
}

// alwaysPrefixed reports whether the wire byte c must be prefixed whatever
// Bare says: NUL, SOH, CR and their 8-bit twins.
func alwaysPrefixed(c byte, lengthFramed bool) bool {
	if lengthFramed {
		return c == SOH
	}
	c &= 0x7F
	return c == 0 || c == SOH || c == '\r'
}

// Protect makes c and its 8-bit twin (c^0x80) always prefixed, by clearing
// them in Bare. Call it for a packet MARK other than SOH and for the
// peer's EOL if it is not CR: C-Kermit ends a packet at its EOL wherever
// it appears.
func (q *Quoting) Protect(c byte) {
	q.Bare[c&0x7F] = false
	q.Bare[c|0x80] = false
}

// validPrefix reports whether c can be a prefix character. Characters in
// 63..95 are excluded because after QCTL they mean a control character.
func validPrefix(c byte) bool {
	return c > ' ' && c < '?' || c >= '`' && c <= '~'
}

// Validate reports whether the prefix characters are usable: QCTL (or its
// default '#'), and QBIN and REPT when non-zero, must be distinct
// characters in 33..62 or 96..126. Encode and Decode do not check.
func (q *Quoting) Validate() error {
	qctl := q.qctl()
	if !validPrefix(qctl) {
		return fmt.Errorf("framing: invalid control prefix %q", qctl)
	}
	if q.QBIN != 0 && (!validPrefix(q.QBIN) || q.QBIN == qctl) {
		return fmt.Errorf("framing: invalid 8th-bit prefix %q", q.QBIN)
	}
	if q.REPT != 0 && (!validPrefix(q.REPT) || q.REPT == qctl || q.REPT == q.QBIN) {
		return fmt.Errorf("framing: invalid repeat prefix %q", q.REPT)
	}
	return nil
}

func (q *Quoting) qctl() byte {
	if q.QCTL == 0 {
		return '#'
	}
	return q.QCTL
}

// maxRepeat is the largest repeat count, tochar(94) = '~'.
const maxRepeat = 94

// maxUnit is the longest encoding of one byte: QBIN QCTL char.
const maxUnit = 3

// unit is the encoding of one byte without repeat prefix: the bytes in
// the low three bytes (first byte lowest), the length in the top byte.
type unit uint32

func (u unit) len() int { return int(u >> 24) }

// quoteTable is a Quoting compiled for Encode. Tables are immutable and
// shared through a small cache keyed by the whole Quoting value.
type quoteTable struct {
	key  Quoting
	unit [256]unit
}

func compileQuoting(q *Quoting) *quoteTable {
	t := &quoteTable{key: *q}
	qctl := q.qctl()
	for c := range 256 {
		a := byte(c)
		var b [maxUnit]byte
		n := 0
		if q.QBIN != 0 && a&0x80 != 0 {
			b[n] = q.QBIN
			n++
			a &= 0x7F
		}
		a7 := a & 0x7F
		if isControl(a) {
			if !q.Bare[a] || alwaysPrefixed(a, q.LengthFramed) {
				b[n] = qctl
				n++
				a ^= 0x40
			}
		} else if q.LengthFramed && (a == qctl || q.QBIN != 0 && a == q.QBIN || q.REPT != 0 && a == q.REPT) ||
			!q.LengthFramed && (a7 == qctl || q.QBIN != 0 && a7 == q.QBIN || q.REPT != 0 && a7 == q.REPT) {
			// Classic Kermits also escape the prefixes' 8-bit twins; a
			// length-framed receiver (kerf) matches prefixes exactly.
			b[n] = qctl
			n++
		}
		b[n] = a
		n++
		t.unit[c] = unit(b[0]) | unit(b[1])<<8 | unit(b[2])<<16 | unit(n)<<24
	}
	return t
}

var quoteCache struct {
	slot [4]atomic.Pointer[quoteTable]
	next atomic.Uint32
}

// table returns the compiled form of q, from the cache when possible.
func (q *Quoting) table() *quoteTable {
	for i := range quoteCache.slot {
		if t := quoteCache.slot[i].Load(); t != nil && t.key == *q {
			return t
		}
	}
	t := compileQuoting(q)
	i := quoteCache.next.Add(1) % uint32(len(quoteCache.slot))
	quoteCache.slot[i].Store(t)
	return t
}

// MaxEncodedLen is the longest encoding of n source bytes (every byte
// needing both QBIN and QCTL).
func MaxEncodedLen(n int) int { return n * maxUnit }

// Encode appends the prefixed encoding of a prefix of src to dst, using
// at most max output bytes, and returns the new dst and how many bytes of
// src it consumed. It never splits a prefix sequence.
//
// Encode does not allocate when dst has room for min(max,
// MaxEncodedLen(len(src))) more bytes, except to compile a Quoting it has
// not seen recently (a few recent ones are cached). It may use that room
// past the returned length as scratch (never beyond max). A repeat run is
// cut at 94 or where max is reached; the next call continues it.
func (q *Quoting) Encode(dst, src []byte, max int) ([]byte, int) {
	if max <= 0 || len(src) == 0 {
		return dst, 0
	}
	t := q.table()
	limit := MaxEncodedLen(len(src))
	if max < limit {
		limit = max
	}
	dst = slices.Grow(dst, limit)
	out := dst[len(dst) : len(dst)+limit]
	w, i := 0, 0
	if q.REPT == 0 {
		// While 4 bytes are free, store each unit as one word; only
		// its n bytes count, the rest is overwritten by the next unit.
		for ; i < len(src) && w+4 <= len(out); i++ {
			u := t.unit[src[i]]
			binary.LittleEndian.PutUint32(out[w:], uint32(u))
			w += u.len()
		}
		for ; i < len(src); i++ {
			u := t.unit[src[i]]
			n := u.len()
			if w+n > len(out) {
				break
			}
			put(out[w:], u, n)
			w += n
		}
		return dst[:len(dst)+w], i
	}
	rept := q.REPT
	for i < len(src) {
		c := src[i]
		u := t.unit[c]
		n := u.len()
		if i+1 < len(src) && src[i+1] == c {
			j := i + 2
			end := min(len(src), i+maxRepeat)
			for j < end && src[j] == c {
				j++
			}
			if r := j - i; (r >= 3 || n == maxUnit) && w+2+n <= len(out) {
				out[w] = rept
				out[w+1] = kchar(r)
				put(out[w+2:], u, n)
				w += 2 + n
				i = j
				continue
			}
		}
		if w+4 <= len(out) {
			binary.LittleEndian.PutUint32(out[w:], uint32(u))
		} else if w+n <= len(out) {
			put(out[w:], u, n)
		} else {
			break
		}
		w += n
		i++
	}
	return dst[:len(dst)+w], i
}

// put writes the n bytes of u to b.
func put(b []byte, u unit, n int) {
	switch n {
	case 1:
		b[0] = byte(u)
	case 2:
		_ = b[1]
		b[0] = byte(u)
		b[1] = byte(u >> 8)
	default:
		_ = b[2]
		b[0] = byte(u)
		b[1] = byte(u >> 8)
		b[2] = byte(u >> 16)
	}
}

// Decode appends the decoded form of the data field src to dst.
// A truncated prefix sequence is an error.
//
// Prefixes are recognised by exact byte value, as G-Kermit and C-Kermit
// do: bare control and 8-bit bytes are taken literally. A repeat count
// must be a printable character; a count of 0 means 1 (as in both
// reference Kermits). On error dst holds what was decoded before it.
func (q *Quoting) Decode(dst, src []byte) ([]byte, error) {
	var special [256]bool
	qctl := q.qctl()
	special[qctl] = true
	if q.QBIN != 0 {
		special[q.QBIN] = true
	}
	if q.REPT != 0 {
		special[q.REPT] = true
	}
	for i := 0; i < len(src); {
		a := src[i]
		if !special[a] {
			dst = append(dst, a)
			i++
			continue
		}
		start := i
		i++
		r := 1
		if q.REPT != 0 && a == q.REPT {
			if i+1 >= len(src) {
				return dst, truncated("repeat", start)
			}
			cnt := src[i]
			if cnt < ' ' || cnt > '~' {
				return dst, fmt.Errorf("%w: repeat count %#02x at offset %d is not a printable character", ErrBadQuoting, cnt, start+1)
			}
			if r = kunchar(cnt); r == 0 {
				r = 1
			}
			a = src[i+1]
			i += 2
		}
		var b8 byte
		if q.QBIN != 0 && a == q.QBIN {
			if i >= len(src) {
				return dst, truncated("8th-bit", start)
			}
			b8 = 0x80
			a = src[i]
			i++
		}
		if a == qctl {
			if i >= len(src) {
				return dst, truncated("control", start)
			}
			a = src[i]
			i++
			if a7 := a & 0x7F; a7 >= '?' && a7 <= '_' {
				a ^= 0x40
			}
		}
		a |= b8
		for ; r > 0; r-- {
			dst = append(dst, a)
		}
	}
	return dst, nil
}

func truncated(what string, off int) error {
	return fmt.Errorf("%w: truncated %s prefix sequence at offset %d", ErrBadQuoting, what, off)
}
