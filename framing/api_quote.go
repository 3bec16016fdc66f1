package framing

// Quoting is the negotiated prefixing for data fields.
type Quoting struct {
	QCTL byte // control prefix, normally '#'
	QBIN byte // 8th-bit prefix; 0 = none (8-bit clean link)
	REPT byte // repeat prefix; 0 = none
	// Bare marks control bytes (0..31, 127, 128..159, 255) that may be sent
	// unprefixed. The zero value prefixes all of them, the safe choice.
	Bare [256]bool
}

// CautiousBare returns C-Kermit's "cautious" unprefixing set: every
// control byte bare except those that terminals, flow control or packet
// framing may eat (NUL, SOH, CR, XON/XOFF, ^C, DLE, ... and their +128).
func CautiousBare() [256]bool { panic("todo") }

// Encode appends the prefixed encoding of a prefix of src to dst, using
// at most max output bytes, and returns the new dst and how many bytes of
// src it consumed. It never splits a prefix sequence.
func (q *Quoting) Encode(dst, src []byte, max int) ([]byte, int) { panic("todo") }

// Decode appends the decoded form of the data field src to dst.
// A truncated prefix sequence is an error.
func (q *Quoting) Decode(dst, src []byte) ([]byte, error) { panic("todo") }
