package main

import (
	"fmt"
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

// Names that would not fit one packet together go in several GETs, each
// within the budget, every name once and in order. (QA: 1,000 names in
// one GET did not fit a packet, and the client dialled again for 2
// minutes.)
func TestSpecGroupsSplitLong(t *testing.T) {
	var names []string
	for i := range 1000 {
		names = append(names, fmt.Sprintf("many/d5/file-%04d", i))
	}
	names = append(names, "with space/x")
	for _, classic := range []bool{false, true} {
		groups := specGroups(names, classic)
		if len(groups) < 2 {
			t.Fatalf("classic=%v: one GET of %d bytes", classic, len(groups[0]))
		}
		var back []string
		for _, g := range groups {
			if len(g) > specBudget {
				t.Errorf("classic=%v: a GET of %d bytes", classic, len(g))
			}
			back = append(back, framing.SplitSpec(g)...)
		}
		if !slices.Equal(back, names) {
			t.Errorf("classic=%v: the groups name %d names, not the %d asked for in order", classic, len(back), len(names))
		}
	}
}

// Names with wildcard characters go at most specWildcards to a GET: a
// kerf server takes 256 (QA: 300 names t[1] .. t[300] in one GET failed
// it whole, though each exists literally).
func TestSpecGroupsSplitWildcards(t *testing.T) {
	var names []string
	for i := range 300 {
		names = append(names, fmt.Sprintf("br2/t[%d]", i))
	}
	groups := specGroups(names, false)
	var back []string
	for _, g := range groups {
		n := 0
		for _, s := range framing.SplitSpec(g) {
			if hasWildcard(s) {
				n++
			}
			back = append(back, s)
		}
		if n > specWildcards {
			t.Errorf("a GET of %d names with wildcards", n)
		}
	}
	if len(groups) < 2 || !slices.Equal(back, names) {
		t.Errorf("%d groups naming %d names; want several, every name once in order", len(groups), len(back))
	}
}
