package filestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kerf/filestore"
	"kerf/kermit"
)

// A file that becomes something else between its directory's read and
// its turn in the walk is taken as what it is then: a link leading out
// of the tree is refused as one (QA: passed over as "a link to a
// symbolic link", exit 0), a link to a file in the tree sends that file,
// and a file gone is said to be so under its path in the tree, not the
// server's own path to it (QA: ".../qa-files-root/race4/f30").
func TestWalkTakesEntriesAsTheyAreThen(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), []byte("secret"))
	makeTree(t, root, "race/a", "race/b", "race/c", "race/d", "race/target")
	d := openTree(t, root)
	seen := map[string]kermit.OutgoingFile{}
	_, err := d.MatchWalk("race", true, nil, func(f kermit.OutgoingFile) bool {
		seen[f.Name] = f
		if f.Name == "race/a" {
			// The directory is read: change its entries under the walk.
			p := func(n string) string { return filepath.Join(root, "race", n) }
			os.Remove(p("b"))
			os.Symlink(filepath.Join(outside, "secret"), p("b"))
			os.Remove(p("c"))
			os.Symlink("target", p("c"))
			os.Remove(p("d"))
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	open := func(name string) error {
		f, ok := seen[name]
		if !ok {
			t.Fatalf("%s not listed", name)
		}
		r, err := f.Open()
		if err == nil {
			r.Close()
		}
		return err
	}
	if err := open("race/b"); err == nil || errors.Is(err, kermit.ErrPassedOver) || !filestore.LeadsOutside(err) {
		t.Errorf("race/b, made a link out of the tree: %v; want refused as leading outside", err)
	}
	if err := open("race/c"); err != nil {
		t.Errorf("race/c, made a link to a file of the tree: %v; want it sent", err)
	}
	err = open("race/d")
	if err == nil || !strings.Contains(err.Error(), "race/d") || strings.Contains(err.Error(), root) {
		t.Errorf("race/d, removed: %v; want an error naming race/d, not %s", err, root)
	}
}

// A GET of "dir/." walks dir's contents, named from within it, as
// send -r has "dir/." (cp's rule); "dir" keeps its name. (QA: get -r
// host/dst/. made out/dst/..., where send -r dst/. sends the contents.)
func TestMatchDotNamesFromWithin(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "top/sub/b.txt", "top/sub/deeper/c.txt")
	if err := os.Symlink("top/sub", filepath.Join(root, "lnk")); err != nil {
		t.Fatal(err)
	}
	d := openTree(t, root)
	for spec, want := range map[string][]string{
		"top/sub/.": {"b.txt", "deeper/", "deeper/c.txt"},
		"lnk/.":     {"b.txt", "deeper/", "deeper/c.txt"}, // a link to a directory: the same (review)
		"top/sub":   {"sub/", "sub/b.txt", "sub/deeper/", "sub/deeper/c.txt"},
	} {
		files, err := d.Match(spec, true)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range files {
			n := f.Name
			if f.Dir {
				n += "/"
			}
			got = append(got, n)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Match(%q) = %q, want %q", spec, got, want)
		}
	}
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
