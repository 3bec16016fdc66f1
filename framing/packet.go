package framing

import (
	"bytes"
	"errors"
	"slices"
)

// Control characters and limits from the Kermit Protocol Manual.
const (
	SOH = 0x01 // default packet MARK

	MaxShortLen = 94   // largest LEN a short packet can carry
	MaxLongLen  = 9024 // largest DATA+CHECK a long packet can carry (94*95+94)
)

// Sentinel errors; ParsePacket wraps them with detail.
var (
	ErrIncomplete = errors.New("framing: incomplete packet")
	ErrBadHeader  = errors.New("framing: bad packet header")
	ErrBadCheck   = errors.New("framing: bad block check")
	ErrTooLong    = errors.New("framing: packet data too long")
)

// Packet is one decoded Kermit packet. Data is the data field as it
// travels (still prefix-encoded); for ParsePacket it aliases the input.
type Packet struct {
	Seq  int  // 0..63
	Type byte // 'S', 'Y', 'D', ...
	Data []byte
}

// Frame holds the per-direction framing settings.
//
// The MARK should be a control character (SOH by default): ParsePacket
// treats a MARK inside a packet as the start of the next one, the way
// C-Kermit's ttinl() does, so it must never appear bare in a data field
// (Quoting always prefixes SOH; see Quoting.Protect for other marks).
type Frame struct {
	Mark   byte      // start-of-packet; 0 means SOH
	Check  CheckType // block check type used for this packet
	Parity bool      // 7-bit line: ignore the 8th bit of every byte read
}

// Wire layout of a packet (offsets from the MARK):
//
//	short: MARK LEN SEQ TYPE DATA... CHECK
//	long:  MARK ' ' SEQ TYPE LENX1 LENX2 HCHECK DATA... CHECK
//
// LEN = tochar(len(SEQ..CHECK)), at most 94. For a long packet
// LENX1*95+LENX2 = len(DATA)+len(CHECK) (at most 9024) and HCHECK is the
// type-1 check of LEN, SEQ, TYPE, LENX1, LENX2. The block check covers
// LEN through the last DATA character.
const (
	offLen   = 1
	offSeq   = 2
	offType  = 3
	offLenX1 = 4
	offLenX2 = 5
	offHChk  = 6

	shortHeader = 4 // MARK LEN SEQ TYPE
	longHeader  = 7 // ... LENX1 LENX2 HCHECK
)

// packetError is a ParsePacket error: a sentinel plus fixed detail, so that
// reporting damage never allocates.
type packetError struct {
	err error
	msg string
}

func (e *packetError) Error() string { return e.msg }
func (e *packetError) Unwrap() error { return e.err }

func headerError(detail string) error {
	return &packetError{ErrBadHeader, ErrBadHeader.Error() + ": " + detail}
}

var (
	errNoMark      = headerError("packet does not start with the MARK")
	errMarkInside  = headerError("MARK inside the packet (the rest was lost)")
	errLenRange    = headerError("LEN is not a length character")
	errLenSmall    = headerError("LEN too small for SEQ, TYPE and block check")
	errSeqRange    = headerError("SEQ out of range 0..63")
	errTypeRange   = headerError("TYPE is not a printable character")
	errLenXRange   = headerError("extended length is not a length character")
	errLenXSmall   = headerError("extended length smaller than the block check")
	errHeaderCheck = headerError("extended header checksum mismatch")

	errCheckMismatch = [4]error{
		1: &packetError{ErrBadCheck, ErrBadCheck.Error() + ": type 1 checksum mismatch"},
		2: &packetError{ErrBadCheck, ErrBadCheck.Error() + ": type 2 checksum mismatch"},
		3: &packetError{ErrBadCheck, ErrBadCheck.Error() + ": type 3 CRC mismatch"},
	}

	errCheckType = errors.New("framing: unsupported block check type")
	errSeqArg    = errors.New("framing: packet sequence number out of range 0..63")
	errTypeArg   = errors.New("framing: packet type is not a printable character")
)

func (f Frame) mark() byte {
	if f.Mark == 0 {
		return SOH
	}
	return f.Mark
}

// IsLong reports whether a data field of n characters needs the long
// (extended-length) packet format with check type ct.
func IsLong(n int, ct CheckType) bool { return n+ct.Len()+2 > MaxShortLen }

// PacketLen returns the wire length (MARK through CHECK, without EOL) of a
// packet carrying n data characters with check type ct.
func PacketLen(n int, ct CheckType) int {
	if IsLong(n, ct) {
		return longHeader + n + ct.Len()
	}
	return shortHeader + n + ct.Len()
}

// AppendPacket appends p in wire form (MARK..CHECK, no EOL, no padding).
// It uses the long form when len(Data)+check+2 > 94. It fails with
// ErrTooLong if Data cannot fit even a long packet.
//
// Data is copied as is: it must already be prefix-encoded (and so never
// contain a bare MARK). AppendPacket does not allocate when dst has room
// for PacketLen(len(p.Data), f.Check) more bytes. With Parity the check is
// computed over the 7-bit values, as the receiver will see them.
func (f Frame) AppendPacket(dst []byte, p Packet) ([]byte, error) {
	cl := f.Check.Len()
	if cl == 0 {
		return dst, errCheckType
	}
	if p.Seq < 0 || p.Seq > 63 {
		return dst, errSeqArg
	}
	if p.Type <= ' ' || p.Type > '~' {
		return dst, errTypeArg
	}
	m := len(p.Data) + cl // DATA+CHECK
	long := m+2 > MaxShortLen
	if long && m > MaxLongLen {
		return dst, ErrTooLong
	}
	hdr := shortHeader
	if long {
		hdr = longHeader
	}
	total := hdr + m
	dst = slices.Grow(dst, total)
	start := len(dst)
	dst = dst[:start+total]
	b := dst[start:]
	b[0] = f.mark()
	b[offSeq] = kchar(p.Seq)
	b[offType] = p.Type
	if long {
		b[offLen] = kchar(0)
		b[offLenX1] = kchar(m / 95)
		b[offLenX2] = kchar(m % 95)
		b[offHChk] = kchar(int(Check1(b[offLen:offHChk])))
	} else {
		b[offLen] = kchar(m + 2)
	}
	copy(b[hdr:], p.Data)
	end := hdr + len(p.Data)
	putCheck(b[end:], f.Check, blockCheck(f.Check, b[offLen:end], f.Parity))
	return dst, nil
}

// ParsePacket decodes one packet at the start of buf, which must begin
// with the MARK. It returns the packet, the number of bytes it used, and
// an error. ErrIncomplete: more bytes are needed (n is 0). ErrBadHeader or
// ErrBadCheck: the packet is damaged; n tells how far to skip (at least 1)
// before looking for the next MARK. A short LEN of 95 or 96 is accepted
// for compatibility with C-Kermit 10.0 Beta.05-08 senders.
//
// Also for C-Kermit 10.0 Beta.08, LENX1 may be DEL (95), giving a long
// packet of up to 95*95+94 = 9119 DATA+CHECK characters; AppendPacket
// never produces either form.
//
// Header fields are checked as soon as they arrive, so a damaged header is
// reported without waiting for the bytes its length promised; n is then
// 1. A MARK found inside the packet means the rest of it was lost: that
// is ErrBadHeader with n at the new MARK. ErrBadCheck has n = the length
// the header announced. n never exceeds len(buf), and the EOL after the
// check is not consumed.
//
// With Parity the 8th bit of every byte is ignored, and ParsePacket clears
// it in place in the bytes of a complete packet so that Data is 7-bit.
// A packet sent with a different block check type (an S packet or its ACK
// always uses type 1) fails with ErrBadCheck; the caller may parse the
// same bytes again with another Frame. ParsePacket never allocates.
func (f Frame) ParsePacket(buf []byte) (p Packet, n int, err error) {
	cl := f.Check.Len()
	if cl == 0 {
		return Packet{}, len(buf), errCheckType
	}
	if len(buf) == 0 {
		return Packet{}, 0, ErrIncomplete
	}
	mask := byte(0xFF)
	if f.Parity {
		mask = 0x7F
	}
	mark := f.mark()
	if buf[0]&mask != mark {
		return Packet{}, 1, errNoMark
	}

	// Check each header byte that has arrived, then learn the length.
	total := 0 // wire length MARK..CHECK, once known
	hdr := shortHeader
	have := len(buf)
	if have > offLen {
		l := buf[offLen] & mask
		switch {
		case l == ' ':
			hdr = longHeader
		case l > ' ' && (l <= '~' || l == 0x7F || l == 0x80) || l == 0:
			// 0x7F and 0x80 (LEN 95, 96) come from C-Kermit 10.0
			// Beta.05-08, whose long-packet threshold was > 96. On a
			// 7-bit line that 0x80 arrives as 0x00, which is no other
			// length: C-Kermit sends it so over parity links too, and
			// space parity, which leaves the 8th bit 0, is not told
			// from none (QA z: a 91-byte file failed, "too many
			// retries"). The check decides (below).
			ln := kunchar(l)
			if l == 0 {
				ln = 96
			}
			if ln < 2+cl {
				return Packet{}, 1, errLenSmall
			}
			total = 2 + ln
		default:
			return Packet{}, 1, errLenRange
		}
	}
	if have > offSeq {
		if s := buf[offSeq] & mask; s < ' ' || s > ' '+63 {
			return Packet{}, 1, errSeqRange
		}
	}
	if have > offType {
		if t := buf[offType] & mask; t <= ' ' || t > '~' {
			return Packet{}, 1, errTypeRange
		}
	}
	if hdr == longHeader {
		for i := offLenX1; i <= offHChk && i < have; i++ {
			// C-Kermit 10.0 Beta.08 sends LENX1 = 0x7F (m = 9025) when the
			// receiver advertised 9024: accept DEL in LENX1, never send it.
			if c := buf[i] & mask; c < ' ' || c > '~' && !(i == offLenX1 && c == 0x7F) {
				return Packet{}, 1, errLenXRange
			}
		}
		if have > offHChk {
			var h [5]byte
			for i := range h {
				h[i] = buf[offLen+i] & mask
			}
			if kchar(int(Check1(h[:]))) != buf[offHChk]&mask {
				return Packet{}, 1, errHeaderCheck
			}
			m := kunchar(buf[offLenX1]&mask)*95 + kunchar(buf[offLenX2]&mask)
			if m < cl {
				return Packet{}, 1, errLenXSmall
			}
			total = longHeader + m
		}
	}

	// A MARK inside the packet: the sender restarted, or bytes were lost.
	// C-Kermit's ttinl() restarts the same way, which is why every Kermit
	// prefixes a MARK that occurs in data.
	scan := have
	if total > 0 && total < scan {
		scan = total
	}
	if mark < ' ' || mark == 0x7F {
		if i := indexMark(buf[1:scan], mark, f.Parity); i >= 0 {
			return Packet{}, 1 + i, errMarkInside
		}
	}
	if total == 0 || have < total {
		return Packet{}, 0, ErrIncomplete
	}

	pkt := buf[:total]
	if f.Parity {
		for i := range pkt {
			pkt[i] &= 0x7F
		}
	}
	end := total - cl
	if !checkMatches(f.Check, pkt[offLen:end], pkt[end:total]) {
		if pkt[offLen] != 0 {
			return Packet{}, total, errCheckMismatch[f.Check]
		}
		// LEN 96 from C-Kermit 10.0 on a 7-bit line (above): its check
		// covers the LEN byte as it was built, 0x80, before parity.
		pkt[offLen] = 0x80
		ok := checkMatches(f.Check, pkt[offLen:end], pkt[end:total])
		pkt[offLen] = 0
		if !ok {
			return Packet{}, total, errCheckMismatch[f.Check]
		}
	}
	return Packet{
		Seq:  kunchar(pkt[offSeq]),
		Type: pkt[offType],
		Data: pkt[hdr:end:end],
	}, total, nil
}

// checkMatches reports whether got is check type ct's wire form over b.
func checkMatches(ct CheckType, b, got []byte) bool {
	var want [3]byte
	putCheck(want[:], ct, blockCheck(ct, b, false))
	return bytes.Equal(want[:ct.Len()], got)
}

// indexMark returns the index of the first mark in b (with parity, of the
// first byte whose low 7 bits are the mark), or -1.
func indexMark(b []byte, mark byte, parity bool) int {
	i := bytes.IndexByte(b, mark)
	if parity {
		if j := bytes.IndexByte(b, mark|0x80); j >= 0 && (i < 0 || j < i) {
			i = j
		}
	}
	return i
}
