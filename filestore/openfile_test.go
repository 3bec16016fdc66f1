package filestore_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"kerf/filestore"
)

// Files a match found are opened in their directory's cached handle,
// not through a fresh walk of the path; these are the cases where the
// two could differ.
func TestMatchOpenAfterChanges(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	makeTree(t, root, "a/swapped.txt", "a/kept.txt", "gone/x.txt", "gone2/z.txt", "real/y.txt")
	os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644)
	os.Symlink("real", filepath.Join(root, "linkdir"))
	d, _ := filestore.Open(root)
	defer d.Close()

	open := func(spec string, recursive bool) map[string]func() (string, error) {
		t.Helper()
		files, err := d.Match(spec, recursive)
		if err != nil {
			t.Fatalf("Match(%q): %v", spec, err)
		}
		m := map[string]func() (string, error){}
		for _, f := range files {
			m[f.Name] = func() (string, error) {
				r, err := f.Open()
				if err != nil {
					return "", err
				}
				defer r.Close()
				b, err := io.ReadAll(r)
				return string(b), err
			}
		}
		return m
	}

	a := open("a", true)
	gone := open("gone", true)
	viaLink := open("linkdir/y.txt", false)

	// A file replaced by a link (out of the tree) after the match is
	// refused, not followed.
	os.Remove(filepath.Join(root, "a/swapped.txt"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "a/swapped.txt"))
	if got, err := a["a/swapped.txt"](); err == nil {
		t.Errorf("a/swapped.txt, now a link out of the tree, read %q", got)
	}
	if got, err := a["a/kept.txt"](); err != nil || got != "a/kept.txt" {
		t.Errorf("a/kept.txt = %q, %v", got, err)
	}
	// A directory removed after the match: its file fails to open, and
	// reading never creates the directory again.
	os.RemoveAll(filepath.Join(root, "gone"))
	if _, err := gone["gone/x.txt"](); err == nil {
		t.Error("gone/x.txt opened after its directory was removed")
	}
	if _, err := os.Lstat(filepath.Join(root, "gone")); !os.IsNotExist(err) {
		t.Errorf("opening a file of a removed directory made it again: %v", err)
	}
	// A directory removed and made again, with the file back in it: the
	// file opens, though the removed directory's handle was cached.
	open("gone2", true)["gone2/z.txt"]()
	os.RemoveAll(filepath.Join(root, "gone2"))
	makeTree(t, root, "gone2/z.txt")
	if got, err := open("gone2", true)["gone2/z.txt"](); err != nil || got != "gone2/z.txt" {
		t.Errorf("gone2/z.txt, its directory made again = %q, %v", got, err)
	}
	// A name through a link to a directory in the tree still opens.
	if got, err := viaLink["y.txt"](); err != nil || got != "real/y.txt" {
		t.Errorf("linkdir/y.txt = %q, %v", got, err)
	}
}
