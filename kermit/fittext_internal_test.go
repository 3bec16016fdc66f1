package kermit

import (
	"net"
	"strings"
	"testing"
	"unicode/utf8"
)

// fitText keeps whole runes and as much of the text as fits.
func TestFitTextWholeRunes(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	s := NewSession(a, DefaultConfig())
	defer s.Close()
	for _, limit := range []int{1, 2, 3, 10, 11, 50} {
		msg := "ab" + strings.Repeat("é", 40)
		enc := s.fitText(msg, limit)
		if len(enc) > limit {
			t.Fatalf("limit %d: %d bytes", limit, len(enc))
		}
		got, err := s.decodeString(enc)
		if err != nil || !utf8.ValidString(got) || !strings.HasPrefix(msg, got) {
			t.Fatalf("limit %d: %q, %v", limit, got, err)
		}
		// Nothing that fits was left out: one more rune would not fit.
		if next := msg[len(got):]; next != "" {
			_, size := utf8.DecodeRuneInString(next)
			if more, n := s.neg.out.Encode(nil, []byte(msg[:len(got)+size]), limit); n == len(got)+size && len(more) <= limit {
				t.Fatalf("limit %d: %q leaves out a rune that fits", limit, got)
			}
		}
	}
}
