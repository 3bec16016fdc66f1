package serialfallback

import (
	"fmt"
	"math/bits"
	"strings"
)

// parity is the software parity a link applies to outgoing bytes.
type parity int

const (
	parityNone parity = iota
	parityEven
	parityOdd
	parityMark
	paritySpace
)

func parseParity(s string) (parity, error) {
	switch strings.ToLower(s) {
	case "", ParityNone:
		return parityNone, nil
	case ParityEven:
		return parityEven, nil
	case ParityOdd:
		return parityOdd, nil
	case ParityMark:
		return parityMark, nil
	case ParitySpace:
		return paritySpace, nil
	}
	return 0, fmt.Errorf("%w: parity %q is not one of none, even, odd, mark, space", ErrInvalidConfig, s)
}

// apply returns c with its 8th bit replaced by the parity bit of its low 7
// bits (unchanged for parityNone).
func (p parity) apply(c byte) byte {
	low := c & 0x7f
	switch p {
	case parityEven:
		return low | byte(bits.OnesCount8(low)&1)<<7
	case parityOdd:
		return low | byte(^bits.OnesCount8(low)&1)<<7
	case parityMark:
		return low | 0x80
	case paritySpace:
		return low
	}
	return c
}
