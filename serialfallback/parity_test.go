package serialfallback

import (
	"errors"
	"strings"
	"testing"
)

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
