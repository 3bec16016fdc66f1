package framing

import (
	"math/bits"
	"strings"
)

// Parity is what a 7-bit line puts in the 8th bit of each character
// (Kermit Protocol Manual, "Eighth-bit and parity"): nothing
// (ParityNone: the line is 8-bit), a parity bit over the low seven
// (even, odd), or a constant (mark: 1, space: 0).
type Parity uint8

const (
	ParityNone Parity = iota
	ParityEven
	ParityOdd
	ParityMark
	ParitySpace
)

var parityNames = [...]string{"none", "even", "odd", "mark", "space"}

func (p Parity) String() string {
	if int(p) < len(parityNames) {
		return parityNames[p]
	}
	return "parity(?)"
}

// ParityByName returns the parity named name ("none", "even", "odd",
// "mark", "space", any case; "" is none); ok is false for anything else.
func ParityByName(name string) (p Parity, ok bool) {
	if name == "" {
		return ParityNone, true
	}
	for i, n := range parityNames {
		if strings.EqualFold(name, n) {
			return Parity(i), true
		}
	}
	return ParityNone, false
}

// Apply returns c as the line carries it: its 8th bit replaced by p's bit
// over its low seven (c unchanged for ParityNone).
func (p Parity) Apply(c byte) byte {
	low := c & 0x7f
	switch p {
	case ParityEven:
		return low | byte(bits.OnesCount8(low)&1)<<7
	case ParityOdd:
		return low | byte(^bits.OnesCount8(low)&1)<<7
	case ParityMark:
		return low | 0x80
	case ParitySpace:
		return low
	}
	return c
}

// AppendParity appends b to dst with p applied to every byte.
func (p Parity) AppendParity(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, p.Apply(c))
	}
	return dst
}
