package framing

import (
	"strings"
	"testing"
)

func TestParityApply(t *testing.T) {
	for _, tc := range []struct {
		par  Parity
		in   byte
		want byte
	}{
		{ParityNone, 0xC3, 0xC3},
		{ParityEven, 'A', 'A'},        // 0x41: two 1 bits
		{ParityEven, 'C', 'C' | 0x80}, // 0x43: three
		{ParityEven, 0xC3, 'C' | 0x80},
		{ParityEven, 0x00, 0x00},
		{ParityEven, 0x7F, 0xFF},
		{ParityOdd, 'A', 'A' | 0x80},
		{ParityOdd, 'C', 'C'},
		{ParityOdd, 0x80, 0x80},
		{ParityMark, 'A', 'A' | 0x80},
		{ParityMark, 0xFF, 0xFF},
		{ParitySpace, 0xC1, 'A'},
		{ParitySpace, 0x7F, 0x7F},
	} {
		if got := tc.par.Apply(tc.in); got != tc.want {
			t.Errorf("parity %v Apply(%#02x) = %#02x, want %#02x", tc.par, tc.in, got, tc.want)
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
		if e := ParityEven.Apply(byte(c)); ones(e)%2 != 0 || e&0x7f != byte(c)&0x7f {
			t.Errorf("even(%#02x) = %#02x", c, e)
		}
		if o := ParityOdd.Apply(byte(c)); ones(o)%2 != 1 || o&0x7f != byte(c)&0x7f {
			t.Errorf("odd(%#02x) = %#02x", c, o)
		}
	}
}

func TestParityByName(t *testing.T) {
	for name, want := range map[string]Parity{"": ParityNone, "none": ParityNone, "EVEN": ParityEven, "odd": ParityOdd, "Mark": ParityMark, "space": ParitySpace} {
		if got, ok := ParityByName(name); !ok || got != want {
			t.Errorf("ParityByName(%q) = %v, %v; want %v", name, got, ok, want)
		}
		if want != ParityNone && want.String() != strings.ToLower(name) {
			t.Errorf("%v.String() = %q, want %q", want, want.String(), strings.ToLower(name))
		}
	}
	for _, name := range []string{"e", "7e1", "even ", "hardware"} {
		if _, ok := ParityByName(name); ok {
			t.Errorf("ParityByName(%q) accepted", name)
		}
	}
}
