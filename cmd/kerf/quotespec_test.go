package main

import (
	"slices"
	"testing"

	"kerf/filestore"
)

// The names a get asks for come back whole from the server's split.
// (Regression: "a{b}c one" was split into "ab", "c" and "one".)
func TestQuoteSpecRoundTrip(t *testing.T) {
	names := []string{"plain", "a{b}c", "{x}", "my file", "{a b}", "br{ace}s[x].bin", "d/{e}", "x}", "my {odd} file"}
	if got := filestore.SplitSpec(quoteSpec(names)); !slices.Equal(got, names) {
		t.Errorf("SplitSpec(quoteSpec(%q)) = %q", names, got)
	}
}
