package filestore_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kerf/kermit"
)

// RemoveLiteral and ListLiteral take a name with wildcard characters as
// it is: absent, it is an error, and the files it would match as a
// pattern are neither deleted nor listed (QA: rm of an escaped
// "data[2024].tar" deleted data0.tar, data2.tar and data4.tar).
func TestRemoveLiteralNeverMatches(t *testing.T) {
	dir := t.TempDir()
	makeTree(t, dir, "bk/data0.tar", "bk/data2.tar", "bk/data4.tar", "bk/x[1].txt", "bk/sub[1]/f")
	d := openTree(t, dir)
	if list, err := d.ListLiteral("bk/data[2024].tar"); err == nil {
		t.Errorf("ListLiteral of a missing name listed %q", list)
	}
	if err := d.RemoveLiteral("bk/data[2024].tar"); err == nil {
		t.Error("RemoveLiteral of a missing name gave no error")
	}
	var b strings.Builder
	if err := d.ListTreeLiteral("bk/data[2024].tar", kermit.TreeForm{}, &b); err == nil {
		t.Errorf("ListTreeLiteral of a missing name listed %q", b.String())
	}
	for _, f := range []string{"data0.tar", "data2.tar", "data4.tar"} {
		if _, err := os.Stat(filepath.Join(dir, "bk", f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	list, err := d.ListLiteral("bk/x[1].txt")
	if err != nil || !strings.HasSuffix(strings.TrimSpace(list), " x[1].txt") || strings.Count(list, "\n") != 1 {
		t.Errorf("ListLiteral(x[1].txt) = %q, %v", list, err)
	}
	if list, err := d.ListLiteral("bk/sub[1]"); err != nil || !strings.HasSuffix(strings.TrimSpace(list), " f") {
		t.Errorf("ListLiteral of a directory = %q, %v; want what it holds", list, err)
	}
	b.Reset()
	if err := d.ListTreeLiteral("bk/sub[1]", kermit.TreeForm{}, &b); err != nil || !strings.Contains(b.String(), "bk/sub[1]/f") {
		t.Errorf("ListTreeLiteral(bk/sub[1]) = %q, %v", b.String(), err)
	}
	if err := d.RemoveLiteral("bk/x[1].txt"); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveLiteral("bk/sub[1]"); err == nil {
		t.Error("RemoveLiteral removed a directory")
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "bk"))
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := []string{"data0.tar", "data2.tar", "data4.tar", "sub[1]"}; !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
	// The pattern itself still works as before, without the request.
	if err := d.Remove("bk/data[24].tar"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bk/data0.tar")); err != nil {
		t.Error("data[24].tar removed data0.tar")
	}
}
