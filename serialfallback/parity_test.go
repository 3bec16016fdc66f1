package serialfallback

import (
	"errors"
	"strings"
	"testing"
)

func TestParityApply(t *testing.T) {
	for _, tc := range []struct {
		par  parity
		in   byte
		want byte
	}{
		{parityNone, 0xC3, 0xC3},
		{parityEven, 'A', 'A'},        // 0x41: two 1 bits
		{parityEven, 'C', 'C' | 0x80}, // 0x43: three
		{parityEven, 0xC3, 'C' | 0x80},
		{parityEven, 0x00, 0x00},
		{parityEven, 0x7F, 0xFF},
		{parityOdd, 'A', 'A' | 0x80},
		{parityOdd, 'C', 'C'},
		{parityOdd, 0x80, 0x80},
		{parityMark, 'A', 'A' | 0x80},
		{parityMark, 0xFF, 0xFF},
		{paritySpace, 0xC1, 'A'},
		{paritySpace, 0x7F, 0x7F},
	} {
		if got := tc.par.apply(tc.in); got != tc.want {
			t.Errorf("parity %d apply(%#02x) = %#02x, want %#02x", tc.par, tc.in, got, tc.want)
		}
	}
}

func TestParityEvenOddTotal(t *testing.T) {
	for c := range 256 {
		ones := func(b byte) int {
			n := 0
			for ; b != 0; b &= b - 1 {
				n++
			}
			return n
		}
		if e := parityEven.apply(byte(c)); ones(e)%2 != 0 || e&0x7f != byte(c)&0x7f {
			t.Errorf("even(%#02x) = %#02x", c, e)
		}
		if o := parityOdd.apply(byte(c)); ones(o)%2 != 1 || o&0x7f != byte(c)&0x7f {
			t.Errorf("odd(%#02x) = %#02x", c, o)
		}
	}
}

func TestParseParity(t *testing.T) {
	for _, s := range []string{"", "none", "even", "ODD", "Mark", "space"} {
		if _, err := parseParity(s); err != nil {
			t.Errorf("parseParity(%q): %v", s, err)
		}
	}
	for _, s := range []string{"e", "evn", "hardware", "even ", "7e1"} {
		_, err := parseParity(s)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "none, even, odd, mark, space") {
			t.Errorf("parseParity(%q) = %v, want ErrInvalidConfig listing the choices", s, err)
		}
	}
}

func TestSevenBit(t *testing.T) {
	for p, want := range map[string]bool{"": false, "none": false, "even": true, "space": true, "bogus": false} {
		if got := (LinkConfig{Parity: p}).SevenBit(); got != want {
			t.Errorf("SevenBit with parity %q = %v, want %v", p, got, want)
		}
	}
}
