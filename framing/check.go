package framing

// Kermit block checks (Kermit Protocol Manual; gkermit.c chk1/chksum/chk3,
// ckcfn2.c chk1/chk2/chk3). A check covers the packet from LEN through the
// last DATA character; on a 7-bit (parity) line the 8th bit of every byte
// is ignored.

// CheckType is a block check type: 1 (6-bit sum), 2 (12-bit sum) or 3 (CRC-16/KERMIT).
type CheckType int

// Len is the number of characters the check occupies on the wire: 1, 2 or
// 3, or 0 for a type this package does not implement.
func (c CheckType) Len() int {
	if c >= 1 && c <= 3 {
		return int(c)
	}
	return 0
}

// Check1 returns the type-1 block check of b: the 6-bit folded sum
// (s + ((s & 0300) >> 6)) & 077. On the wire it is one character,
// tochar(Check1(b)).
func Check1(b []byte) byte { return fold6(sum(b)) }

// Check2 returns the type-2 block check of b: the low 12 bits of the sum
// of its bytes, sent as tochar(s>>6), tochar(s&077).
func Check2(b []byte) uint16 { return uint16(sum(b) & 0xFFF) }

// CRC16 returns the type-3 block check of b, CRC-16/KERMIT (polynomial
// 0x1021 reflected, initial value 0, no final XOR; "123456789" gives
// 0x2189). It is sent as the three characters tochar(crc>>12),
// tochar((crc>>6)&077), tochar(crc&077) — not byte-swapped.
func CRC16(b []byte) uint16 { return crc16(0, b) }

func fold6(s uint) byte { return byte((s + ((s & 0xC0) >> 6)) & 0x3F) }

func sum(b []byte) uint {
	var s uint
	for _, c := range b {
		s += uint(c)
	}
	return s
}

func sum7(b []byte) uint {
	var s uint
	for _, c := range b {
		s += uint(c & 0x7F)
	}
	return s
}

// crc16Tables are the slicing-by-8 tables of CRC-16/KERMIT (LSB first):
// crc16Tables[0] is the classic byte-at-a-time table, and
// crc16Tables[k][b] is the CRC of byte b followed by k zero bytes.
var crc16Tables = func() (t [8][256]uint16) {
	for i := range t[0] {
		c := uint16(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0x8408
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for k := 1; k < 8; k++ {
		for i := range t[k] {
			c := t[k-1][i]
			t[k][i] = c>>8 ^ t[0][byte(c)]
		}
	}
	return t
}()

func crc16(crc uint16, b []byte) uint16 {
	t := &crc16Tables
	for len(b) >= 8 {
		crc ^= uint16(b[0]) | uint16(b[1])<<8
		crc = t[7][byte(crc)] ^ t[6][crc>>8] ^ t[5][b[2]] ^ t[4][b[3]] ^
			t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]
		b = b[8:]
	}
	for _, c := range b {
		crc = crc>>8 ^ t[0][byte(crc)^c]
	}
	return crc
}

func crc16x7(crc uint16, b []byte) uint16 {
	for _, c := range b {
		crc = crc>>8 ^ crc16Tables[0][byte(crc)^(c&0x7F)]
	}
	return crc
}

// blockCheck computes check type ct over b (stripping bit 8 when parity)
// and returns it as a value; putCheck writes it in wire form.
func blockCheck(ct CheckType, b []byte, parity bool) uint16 {
	switch ct {
	case 1, 2:
		var s uint
		if parity {
			s = sum7(b)
		} else {
			s = sum(b)
		}
		if ct == 1 {
			return uint16(fold6(s))
		}
		return uint16(s & 0xFFF)
	default:
		if parity {
			return crc16x7(0, b)
		}
		return crc16(0, b)
	}
}

// putCheck writes the ct.Len() wire characters of check value v into dst.
func putCheck(dst []byte, ct CheckType, v uint16) {
	switch ct {
	case 1:
		dst[0] = kchar(int(v & 0x3F))
	case 2:
		dst[0] = kchar(int(v >> 6 & 0x3F))
		dst[1] = kchar(int(v & 0x3F))
	case 3:
		dst[0] = kchar(int(v >> 12 & 0x0F))
		dst[1] = kchar(int(v >> 6 & 0x3F))
		dst[2] = kchar(int(v & 0x3F))
	}
}

// kchar is Kermit's tochar(): 0..94 to a printable character.
func kchar(x int) byte { return byte(x + ' ') }

// kunchar is Kermit's unchar().
func kunchar(c byte) int { return int(c) - ' ' }
