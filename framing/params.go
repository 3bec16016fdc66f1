package framing

import "strings"

// Send-Init parameters: the data field of S and I packets and of their
// ACKs (Kermit Protocol Manual; ckcfns.c rpar()/spar(), gkermit.c
// rpar()/spar()). Fields in order, 0-based:
//
//	0 MAXL    tochar(n)      max short packet length I can receive
//	1 TIME    tochar(n)      seconds before you should time me out
//	2 NPAD    tochar(n)      padding characters I need
//	3 PADC    ctl(c)         the padding character
//	4 EOL     tochar(c)      the packet terminator I want
//	5 QCTL    literal        the control prefix I send
//	6 QBIN    literal        'Y', 'N' or an 8th-bit prefix
//	7 CHKT    '1'..'3', '5'  block check type ('5': type 3 on every packet; 'B' also seen)
//	8 REPT    literal        repeat prefix, ' ' = none
//	9 CAPAS   tochar(bits)   bit 1 set: another CAPAS byte follows
//	c+1 WINDO tochar(n)      window slots
//	c+2,c+3   MAXLX1/2       tochar(n/95), tochar(n%95): long packet length
//	c+4 CHKPNT '0'           plus 3 reserved CHKINT characters
//	c+8 WHATAMI tochar(bits)
//	c+9 sysid tochar(len) + len characters, e.g. `"U1`
//	next WHATAMI2 tochar(bits)
//	next kerf Ext tochar(len) + len characters (kerf only)
//
// where c is the index of the last CAPAS byte. Any trailing run of fields
// may be absent.

// Capability bits of the first CAPAS byte.
const (
	CapLong    = 2
	CapWindows = 4
	CapAttrs   = 8
	CapResend  = 16
	CapLocking = 32
)

// Capability bits of kerf's second CAPAS byte (a continuation byte that
// classic Kermits skip).
const (
	Cap2DualChannel = 2 // the kerf dual-channel extension
)

// WHATAMI bits (ckcker.h and gkermit.h WMI_*). The field means something
// only when WhatValid is set.
const (
	WhatServer  = 1 // I am a server
	WhatBinary  = 2 // my file transfer mode is binary
	WhatLiteral = 4 // WMI_FNAME. Beware: C-Kermit sets it when it DOES convert
	// file names (fncnv), G-Kermit when it does not (literal). Observed:
	// C-Kermit's S packets have it set, its ACK to an S from a "U1" peer
	// has it clear, its ACK to an S without sysid has it set.
	WhatStreaming = 8  // I have a reliable transport: offer to stream
	WhatClear     = 16 // I have a clear channel
	WhatValid     = 32 // this field is valid
)

// Params are the Send-Init parameters of one side (S, I and their ACKs).
type Params struct {
	MaxLen  int       // MAXL, short packet length (<= 94)
	Timeout int       // TIME, seconds
	NPad    int       // NPAD
	PadChar byte      // PADC (the pad character itself, not ctl()'d)
	EOL     byte      // EOL (the terminator itself, e.g. '\r')
	QCTL    byte      // control prefix this side sends
	QBIN    byte      // 'Y', 'N' or a prefix character
	Check   CheckType // requested block check (1, 2, 3)
	// Force3 is C-Kermit's block check "5" (FORCE-3): type 3 on every
	// packet, the Send-Init and its ACK included. Check is then 3.
	Force3   bool
	REPT     byte   // repeat prefix, or ' ' for none
	Capas    int    // first CAPAS byte's bits (without the continuation bit)
	Capas2   int    // kerf's second CAPAS byte bits; 0 = not sent
	Capas3   int    // kerf's third CAPAS byte bits; 0 = not sent
	Capas4   int    // kerf's fourth CAPAS byte bits; 0 = not sent
	Window   int    // WINDO
	MaxLenX  int    // MAXLX1*95+MAXLX2, long packet length
	WhatAmI  int    // WHATAMI bits (WhatValid set if present)
	SysID    string // e.g. "U1"
	WhatAmI2 int
	// Ext is kerf's extension field (dual-channel address and token);
	// sent after WHATAMI2 only when non-empty. Printable ASCII, <= 60 bytes.
	Ext string
}

// Protocol defaults for absent or unusable fields. The TIME default is
// G-Kermit's (spar(): 5 s when the field is absent).
const (
	defaultMaxLen  = 80
	defaultTimeout = 5
	defaultEOL     = '\r'
	defaultQCTL    = '#'
	defaultMaxLenX = 500 // the manual's default when long packets are agreed but MAXLX is absent
	maxWindow      = 31  // half the sequence space: the largest window selective repeat allows
	maxFieldValue  = 94  // largest number tochar can carry
	capBits        = 0x3E
)

// dec94 is a checked unchar (kunchar in check.go); ok is false when c is
// not a printable character (' '..'~'), i.e. when the field is unusable.
func dec94(c byte) (n int, ok bool) {
	if c < ' ' || c > '~' {
		return 0, false
	}
	return int(c - ' '), true
}

// isPrefixChar reports whether c may serve as a QCTL, QBIN or REPT prefix:
// 33..62 or 96..126 (Kermit Protocol Manual; the same test in spar()).
func isPrefixChar(c byte) bool { return (c > 32 && c < 63) || (c > 95 && c < 127) }

// isCtl reports whether c is a control character (0..31 or DEL), the only
// kind PADC and EOL may name.
func isCtl(c byte) bool { return c < 32 || c == 127 }

func clampInt(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// DefaultParams are the values the protocol assumes for absent fields:
// MAXL 80, TIME 5, no padding (PADC NUL), EOL CR, QCTL '#', QBIN 'N' (no
// 8th-bit prefixing), block check 1, no repeat prefix (' '), no
// capabilities, window 1, long packet length 500 (the manual's default
// should long packets be agreed without a MAXLX field), no WHATAMI
// (WhatValid clear), no system ID, no kerf extension.
func DefaultParams() Params {
	return Params{
		MaxLen:  defaultMaxLen,
		Timeout: defaultTimeout,
		EOL:     defaultEOL,
		QCTL:    defaultQCTL,
		QBIN:    'N',
		Check:   1,
		REPT:    ' ',
		Window:  1,
		MaxLenX: defaultMaxLenX,
	}
}

// Marshal returns the data field of an S/I packet or its ACK.
//
// Every field through WHATAMI2 is always written; Ext follows only when it
// is not empty. The CHKPNT fields are written as "0___" (no checkpointing),
// as C-Kermit does. When Capas2 (or Capas3, Capas4) is not zero the first
// CAPAS byte carries the continuation bit and a second byte follows, and
// so on for a third and a fourth; classic Kermits skip them.
//
// Marshal never fails: values that cannot be encoded are brought into range
// rather than corrupting the field layout, and always to the value
// ParseParams would read back, so Marshal(ParseParams(Marshal(p))) equals
// Marshal(p). MaxLen below 10 becomes 80 (peers ignore such values) and
// above 94 becomes 94; Timeout below 1 becomes 5 (a space would mean
// "default" anyway) and above 94 becomes 94; NPad is clamped to 0..94,
// Window to 1..31; MaxLenX below 1 becomes 500 and above 9024 becomes 9024.
// A PadChar that is not a control character becomes NUL, an EOL outside
// 1..31 CR, a QCTL that is not a valid prefix '#', a QBIN that is neither
// 'Y', 'N' nor a valid prefix 'N', a REPT that is not a valid prefix ' ',
// and a Check other than 1..3 becomes 1 (Force3 writes "5", which reads
// back as Check 3 with Force3). Capas, Capas2, Capas3 and Capas4 keep only bits
// 2..32, WhatAmI and WhatAmI2 only bits 1..32. SysID and Ext are cut to 94
// bytes, the most tochar can count; their bytes are written as given (keep
// them printable).
func (p Params) Marshal() []byte {
	b := make([]byte, 0, 24+len(p.SysID)+len(p.Ext))
	return p.appendTo(b)
}

func (p Params) appendTo(b []byte) []byte {
	padc := p.PadChar
	if !isCtl(padc) {
		padc = 0
	}
	eol := p.EOL
	if eol < 1 || eol > 31 {
		eol = defaultEOL
	}
	qctl := p.QCTL
	if !isPrefixChar(qctl) {
		qctl = defaultQCTL
	}
	qbin := p.QBIN
	if qbin != 'Y' && qbin != 'N' && !isPrefixChar(qbin) {
		qbin = 'N'
	}
	chkt := byte('1')
	if p.Check >= 1 && p.Check <= 3 {
		chkt = byte('0' + p.Check)
	}
	if p.Force3 {
		chkt = '5'
	}
	rept := p.REPT
	if !isPrefixChar(rept) {
		rept = ' '
	}
	maxl := p.MaxLen
	if maxl < 10 {
		maxl = defaultMaxLen
	}
	timeout := p.Timeout
	if timeout < 1 {
		timeout = defaultTimeout
	}
	b = append(b,
		kchar(min(maxl, maxFieldValue)),
		kchar(min(timeout, maxFieldValue)),
		kchar(clampInt(p.NPad, 0, maxFieldValue)),
		padc^64,
		kchar(int(eol)),
		qctl,
		qbin,
		chkt,
		rept,
	)
	capas, capas2, capas3, capas4 := p.Capas&capBits, p.Capas2&capBits, p.Capas3&capBits, p.Capas4&capBits
	switch {
	case capas4 != 0:
		b = append(b, kchar(capas|1), kchar(capas2|1), kchar(capas3|1), kchar(capas4))
	case capas3 != 0:
		b = append(b, kchar(capas|1), kchar(capas2|1), kchar(capas3))
	case capas2 != 0:
		b = append(b, kchar(capas|1), kchar(capas2))
	default:
		b = append(b, kchar(capas))
	}
	maxlx := p.MaxLenX
	if maxlx < 1 {
		maxlx = defaultMaxLenX
	}
	maxlx = min(maxlx, MaxLongLen)
	b = append(b,
		kchar(clampInt(p.Window, 1, maxWindow)),
		kchar(maxlx/95), kchar(maxlx%95),
		'0', '_', '_', '_',
		kchar(p.WhatAmI&0x3F),
	)
	b = appendCounted(b, p.SysID)
	b = append(b, kchar(p.WhatAmI2&0x3F))
	if p.Ext != "" {
		b = appendCounted(b, p.Ext)
	}
	return b
}

// appendCounted appends tochar(len(s)) and s, cut to 94 bytes.
func appendCounted(b []byte, s string) []byte {
	if len(s) > maxFieldValue {
		s = s[:maxFieldValue]
	}
	b = append(b, kchar(len(s)))
	return append(b, s...)
}

// PlausibleParams reports whether data can be Send-Init fields as a
// Kermit writes them: every byte printable (tochar and ctl give nothing
// else) and a block check type a Kermit names (' ', '1' to '5', 'B').
// ParseParams takes anything, as the protocol asks; an S, an I or the
// ACK of one passes only a 6-bit check, and a damaged one that passed
// it by chance (a character added shifts every field after it) is told
// by this, and taken as damaged rather than agreed to.
func PlausibleParams(data []byte) bool {
	for _, c := range data {
		if c < ' ' || c > '~' {
			return false
		}
	}
	return len(data) <= 7 || strings.IndexByte(" 12345B", data[7]) >= 0
}

// ParseParams decodes a Send-Init data field. Absent trailing fields take
// the protocol defaults; unknown CAPAS continuation bytes are skipped.
//
// ParseParams accepts any input and never fails; the error result is
// always nil and exists for future use. It reads like C-Kermit's and
// G-Kermit's spar():
//
//   - A field holding a space, or any byte outside ' '..'~', takes its
//     default (DefaultParams), except NPAD, where a space is 0 anyway.
//   - MAXL below 10 reads as 80, as in both reference implementations.
//   - PADC must decode to a control character and EOL to 1..31, else NUL
//     and CR. QCTL and REPT must be valid prefix characters (33..62,
//     96..126), else '#' and ' '. QBIN must be 'Y', 'N' or a valid prefix,
//     else 'N'.
//   - CHKT '1', '2' and '3' give check types 1..3, and '5' (C-Kermit's
//     FORCE-3) gives 3 with Force3 set. Anything else gives 1, including
//     C-Kermit's 'B' (blank-free type 2, which is not type 2 on the wire):
//     kerf does not implement it and answers 1, which C-Kermit accepts.
//   - Capas gets the first CAPAS byte's bits 2..32; if its continuation bit
//     is set, Capas2 gets the second byte's bits 2..32, and if that one's is
//     set, Capas3 the third's, and Capas4 the fourth's; any further
//     continuation bytes are skipped.
//   - WINDO 0 reads as 1 and above 31 as 31. MAXLX is used only when both
//     bytes are present; 0 reads as 500. WhatAmI is 0 (WhatValid clear)
//     when absent.
//   - A system ID or Ext whose count runs past the end of data is treated
//     as absent, and nothing after it is read.
func ParseParams(data []byte) (Params, error) {
	p := DefaultParams()
	at := func(i int) (int, bool) {
		if i >= len(data) {
			return 0, false
		}
		return dec94(data[i])
	}
	if n, ok := at(0); ok && n >= 10 {
		p.MaxLen = n
	}
	if n, ok := at(1); ok && n > 0 {
		p.Timeout = n
	}
	if n, ok := at(2); ok {
		p.NPad = n
	}
	if len(data) > 3 && isCtl(data[3]^64) {
		p.PadChar = data[3] ^ 64
	}
	if n, ok := at(4); ok && n >= 1 && n <= 31 {
		p.EOL = byte(n)
	}
	if len(data) > 5 && isPrefixChar(data[5]) {
		p.QCTL = data[5]
	}
	if len(data) > 6 {
		if c := data[6]; c == 'Y' || c == 'N' || isPrefixChar(c) {
			p.QBIN = c
		}
	}
	if len(data) > 7 && data[7] >= '1' && data[7] <= '3' {
		p.Check = CheckType(data[7] - '0')
	}
	if ForcesCheck3(data) {
		p.Check, p.Force3 = 3, true
	}
	if len(data) > 8 && isPrefixChar(data[8]) {
		p.REPT = data[8]
	}
	if len(data) <= 9 {
		return p, nil
	}

	// CAPAS, possibly continued.
	i := 9
	n, _ := at(i)
	p.Capas = n & capBits
	more := n&1 != 0
	i++
	if more && i < len(data) {
		n, _ = at(i)
		p.Capas2 = n & capBits
		more = n&1 != 0
		i++
		if more && i < len(data) {
			n, _ = at(i)
			p.Capas3 = n & capBits
			more = n&1 != 0
			i++
		}
		if more && i < len(data) {
			n, _ = at(i)
			p.Capas4 = n & capBits
			more = n&1 != 0
			i++
		}
		for more && i < len(data) {
			n, _ = at(i)
			more = n&1 != 0
			i++
		}
	}
	// i is now the index of WINDO.

	if n, ok := at(i); ok && n > 0 {
		p.Window = min(n, maxWindow)
	}
	hi, okHi := at(i + 1)
	lo, okLo := at(i + 2)
	if okHi && okLo {
		if x := hi*95 + lo; x > 0 {
			p.MaxLenX = min(x, MaxLongLen)
		}
	}
	// i+3: CHKPNT, i+4..i+6: CHKINT, both ignored.
	if n, ok := at(i + 7); ok {
		p.WhatAmI = n & 0x3F
	}
	i += 8
	s, next, ok := counted(data, i)
	if !ok {
		return p, nil
	}
	p.SysID = s
	i = next
	if i >= len(data) {
		return p, nil
	}
	if n, ok := at(i); ok {
		p.WhatAmI2 = n & 0x3F
	}
	i++
	if s, _, ok := counted(data, i); ok {
		p.Ext = s
	}
	return p, nil
}

// counted reads a tochar(len)+chars field at data[i:]. ok is false if the
// field is absent, its count unusable, or its characters cut short.
func counted(data []byte, i int) (s string, next int, ok bool) {
	if i >= len(data) {
		return "", i, false
	}
	n, ok := dec94(data[i])
	if !ok || i+1+n > len(data) {
		return "", i, false
	}
	return string(data[i+1 : i+1+n]), i + 1 + n, true
}

// ForcesCheck3 reports whether Send-Init data asks for type 3 on every
// packet (CHKT "5", C-Kermit's block check 5), without parsing the rest.
func ForcesCheck3(data []byte) bool { return len(data) > 7 && data[7] == '5' }
