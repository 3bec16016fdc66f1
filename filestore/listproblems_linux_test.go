package filestore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"kerf/framing"
	"kerf/kermit"
)

// A tree listing asked with its problems names each directory it could
// not read, after the directory's own line, and lists the rest; asked
// without (a sender's quick check), it leaves them out as before. (QA:
// ls -R of a tree with an unreadable directory looked complete, exit 0.)
func TestListTreeProblems(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "t/pub/a", "t/priv/s", "t/zed/b", "lone/x", "t/unsearched/u", "t/unsearched/v", "t/unsearched/sub/w")
	for dir, mode := range map[string]os.FileMode{"t/priv": 0, "lone": 0, "t/unsearched": 0o644} {
		if err := os.Chmod(filepath.Join(root, dir), mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(filepath.Join(root, dir), 0o755) })
	}
	d := openTree(t, root)
	list := func(spec string, form kermit.TreeForm) (names []string, problems []framing.ListingProblem, err error) {
		t.Helper()
		var b bytes.Buffer
		unprivileged(t, func() { err = d.ListTree(spec, form, &b) })
		entries, problems, perr := framing.ParseTreeListing(b.String(), false)
		if perr != nil {
			t.Fatalf("ListTree(%q, %+v) wrote %q: %v", spec, form, b.String(), perr)
		}
		for _, e := range entries {
			names = append(names, e.Name)
		}
		return names, problems, err
	}
	// A directory read but not searched (0644: QA r, shown as empty)
	// is said once, however many entries it has.
	want := []string{"t", "t/priv", "t/pub", "t/pub/a", "t/unsearched", "t/zed", "t/zed/b"}
	names, problems, err := list("t", kermit.TreeForm{Problems: true})
	if err != nil || !slices.Equal(names, want) || !slices.Equal(problems, []framing.ListingProblem{
		{Name: "t/priv", Cause: "permission denied"}, {Name: "t/unsearched", Cause: "permission denied"}}) {
		t.Errorf("ListTree(t) with problems = %q, %+v, %v\nwant %q and the problems of t/priv and t/unsearched", names, problems, err, want)
	}
	names, problems, err = list("t", kermit.TreeForm{})
	if err != nil || !slices.Equal(names, want) || problems != nil {
		t.Errorf("ListTree(t) without problems = %q, %+v, %v; want %q alone", names, problems, err, want)
	}
	// The directory named, unreadable itself.
	names, problems, err = list("lone", kermit.TreeForm{Problems: true})
	if err != nil || !slices.Equal(names, []string{"lone"}) || len(problems) != 1 || problems[0].Name != "lone" {
		t.Errorf("ListTree(lone) with problems = %q, %+v, %v", names, problems, err)
	}
	// Literal names say theirs too.
	var b bytes.Buffer
	unprivileged(t, func() { err = d.ListTreeLiteral("t/priv", kermit.TreeForm{Problems: true}, &b) })
	if _, p, perr := framing.ParseTreeListing(b.String(), false); err != nil || perr != nil || len(p) != 1 || p[0].Name != "t/priv" {
		t.Errorf("ListTreeLiteral(t/priv) = %q, %v", b.String(), err)
	}
}
