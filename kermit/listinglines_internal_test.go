package kermit

import (
	"slices"
	"strings"
	"testing"
)

// listingLines hands on whole lines however the writes cut them, with
// LF or CRLF ends, a last line without its end at Close, and refuses a
// line that never ends.
func TestListingLines(t *testing.T) {
	for _, c := range []struct {
		writes []string
		want   []string
	}{
		{[]string{"a\nb\n"}, []string{"a", "b"}},
		{[]string{"a", "b\r", "\nc", "d\r\ne"}, []string{"ab", "cd", "e"}},
		{[]string{"\n\n"}, []string{"", ""}},
		{[]string{"", "x"}, []string{"x"}},
		{nil, nil},
	} {
		var got []string
		l := &listingLines{line: func(s string) error { got = append(got, s); return nil }}
		for _, w := range c.writes {
			if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if err := l.Close(); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: lines %q, %v; want %q", c.writes, got, err, c.want)
		}
	}
	l := &listingLines{line: func(string) error { return nil }}
	long := strings.Repeat("x", 4096)
	var err error
	for range maxListingLine/len(long) + 1 {
		if _, err = l.Write([]byte(long)); err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a line of more than %d bytes: %v; want refused", maxListingLine, err)
	}
}
