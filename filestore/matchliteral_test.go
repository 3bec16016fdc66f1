package filestore_test

import (
	"errors"
	"path"
	"slices"
	"strings"
	"testing"

	"kerf/filestore"
)

// A name with wildcard characters that exists is that file; a spec that
// names no existing entry is a pattern.
func TestMatchLiteralBeforePattern(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "wc/brk[et", "wc/star*", "wc/stardust", "wc/q?", "wc/qx")
	d, _ := filestore.Open(root)
	defer d.Close()
	for _, c := range []struct {
		spec string
		want []string
	}{
		{"wc/brk[et", []string{"brk[et"}},
		{"wc/star*", []string{"star*"}},
		{"wc/q?", []string{"q?"}},
		{"wc/sta[r]*", []string{"star*", "stardust"}}, // a pattern that is no name
		{"wc/st?rdust", []string{"stardust"}},
		{"wc/brk[et wc/stardust", []string{"brk[et", "stardust"}},
		{"{wc/star*} wc/q[x]", []string{"qx", "star*"}},
	} {
		files, err := d.Match(c.spec, false)
		if got := fileNames(files); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Match(%q) = %q, %v; want %q", c.spec, got, err, c.want)
		}
	}
	// A malformed pattern that names nothing says so.
	if _, err := d.Match("wc/brk[x", false); !errors.Is(err, path.ErrBadPattern) {
		t.Errorf("Match(wc/brk[x) = %v; want a bad-pattern error", err)
	}
	if l, err := d.List("wc/star*"); err != nil || strings.Count(l, "\n") != 1 || !strings.HasSuffix(l, " star*\n") {
		t.Errorf("List(wc/star*) = %q, %v; want the one file", l, err)
	}
}
