package main

import (
	"slices"
	"testing"

	"kerf/framing"
)

// The names a get asks for come back whole from the server's split.
// (Regression: "a{b}c one" was split into "ab", "c" and "one".)
func TestQuoteSpecRoundTrip(t *testing.T) {
	names := []string{"plain", "a{b}c", "{x}", "my file", "{a b}", "br{ace}s[x].bin", "d/{e}", "x}", "my {odd} file"}
	if got := framing.SplitSpec(quoteSpec(names)); !slices.Equal(got, names) {
		t.Errorf("SplitSpec(quoteSpec(%q)) = %q", names, got)
	}
}

// A name that cannot be quoted among others is asked for alone, to kerf
// and classic servers alike. (Regression: "br2/a} {b" beside "br2/{x}"
// went as "{br2/a} {b} {br2/{x}}", which the server took as br2/a, b
// and br2/{x}: another directory's b came back, and exit 0.)
func TestSpecGroups(t *testing.T) {
	for _, c := range []struct {
		names   []string
		classic bool
		want    []string
	}{
		{[]string{"a", "my file"}, false, []string{"a {my file}"}},
		{[]string{"a", "my file"}, true, []string{"a", "{my file}"}},
		{[]string{"a", "b"}, true, []string{"a b"}},
		{[]string{"br2/a} {b", "br2/{x}"}, false, []string{"{br2/a} {b}", "br2/{x}"}},
		{[]string{"x} y", "a"}, false, []string{"{x} y}", "a"}},
		{[]string{"a} {b"}, false, []string{"{a} {b}"}},
	} {
		if got := specGroups(c.names, c.classic); !slices.Equal(got, c.want) {
			t.Errorf("specGroups(%q, %v) = %q, want %q", c.names, c.classic, got, c.want)
		}
	}
}
