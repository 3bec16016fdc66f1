package filestore_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// ListTree names every entry under what the spec names by its path from
// the current directory, a directory before what it holds; links are
// listed, not followed; of several names the missing ones are left out,
// while one missing name is an error.
func TestListTree(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "top/a.txt", "top/sub/b.txt", "top/sub/deeper/c.txt", "top/empty/",
		"top/.hidden", "top/odd\nname", "other/x", "top.txt", "topaz/y", "br/a} {b", "br/a", "b",
		"part/f", "part/.f.kerf-part", "part/.g.kerf-part")
	os.Symlink("../other", filepath.Join(root, "top/link"))
	d := openTree(t, root)
	list := func(spec string) ([]string, error) {
		t.Helper()
		var b bytes.Buffer
		err := d.ListTree(spec, kermit.TreeForm{}, &b)
		entries, perr := framing.ParseListing(b.String())
		if perr != nil {
			t.Fatalf("ListTree(%q) wrote %q: %v", spec, b.String(), perr)
		}
		var names []string
		for _, e := range entries {
			n := e.Name
			switch {
			case e.Mode.IsDir():
				n += "/"
			case e.Mode&fs.ModeSymlink != 0:
				n += "@"
			}
			names = append(names, n)
		}
		return names, err
	}
	tree := []string{"top/", "top/.hidden", "top/a.txt", "top/empty/", "top/link@", "top/odd\nname",
		"top/sub/", "top/sub/b.txt", "top/sub/deeper/", "top/sub/deeper/c.txt"}
	for _, c := range []struct {
		spec string
		want []string
	}{
		{"top", tree},
		{"top/", tree},
		{"top.txt nothere top", append([]string{"top.txt"}, tree...)},
		{"top/sub/deeper", []string{"top/sub/deeper/", "top/sub/deeper/c.txt"}},
		{"top?txt", []string{"top.txt"}},
		{"top/s*", []string{"top/sub/", "top/sub/b.txt", "top/sub/deeper/", "top/sub/deeper/c.txt"}},
		{"/other", []string{"/other/", "/other/x"}},
		{"*.none", nil},
		// A name that exists whole, as clients send one that cannot
		// be quoted among others (framing.JoinSpec), not br/a and b.
		{"{br/a} {b}", []string{"br/a} {b"}},
		{"top/sub/deeper/.", []string{"top/sub/deeper/", "top/sub/deeper/c.txt"}}, // not top/sub/deeper/deeper
		// A file named comes with the partial left beside it, as a
		// directory's walk lists it, for a resuming sender's check;
		// not a partial without its file.
		{"part/f", []string{"part/f", "part/.f.kerf-part"}},
		{"part/?", []string{"part/f", "part/.f.kerf-part"}},
		{"part", []string{"part/", "part/.f.kerf-part", "part/.g.kerf-part", "part/f"}},
	} {
		got, err := list(c.spec)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ListTree(%q) = %q, %v\nwant %q", c.spec, got, err, c.want)
		}
	}
	if got, err := list("nothere"); !errors.Is(err, fs.ErrNotExist) || len(got) != 0 {
		t.Errorf("ListTree(nothere) = %q, %v; want not found", got, err)
	}
	// From a directory within the tree: names from there.
	if err := d.Chdir("top/sub"); err != nil {
		t.Fatal(err)
	}
	got, err := list("")
	want := []string{"b.txt", "deeper/", "deeper/c.txt"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ListTree(\"\") in top/sub = %q, %v; want %q", got, err, want)
	}
	got, err = list("deeper")
	want = []string{"deeper/", "deeper/c.txt"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ListTree(deeper) in top/sub = %q, %v; want %q", got, err, want)
	}
}

// The listing's lines are List's, with the time's fraction: a tree
// listing of one file is its directory listing's line (of a whole
// second here).
func TestListTreeLineIsList(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "d/f", "e/g")
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chtimes(filepath.Join(root, "d/f"), when, when)
	os.Chtimes(filepath.Join(root, "e/g"), when.Add(123), when.Add(123))
	d := openTree(t, root)
	var e bytes.Buffer
	if err := d.ListTree("e/g", kermit.TreeForm{}, &e); err != nil || !strings.Contains(e.String(), " 2026-01-02 03:04:05.000000123 e/g\n") {
		t.Errorf("ListTree(e/g) = %q, %v; want the time to the nanosecond", e.String(), err)
	}
	var b bytes.Buffer
	if err := d.ListTree("d/f", kermit.TreeForm{}, &b); err != nil {
		t.Fatal(err)
	}
	l, err := d.List("d")
	tree := b.String()
	if err != nil || !strings.HasSuffix(tree, " d/f\n") || strings.TrimSuffix(tree, "d/f\n") != strings.TrimSuffix(l, "f\n") {
		t.Errorf("ListTree(d/f) = %q; List(d) = %q, %v", tree, l, err)
	}
}

// With ino, each line carries the entry's own inode number, read back by
// framing.ParseListingIno.
func TestListTreeIno(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "d/f", "d/g")
	d := openTree(t, root)
	var b bytes.Buffer
	if err := d.ListTree("d", kermit.TreeForm{Ino: true}, &b); err != nil {
		t.Fatal(err)
	}
	entries, err := framing.ParseListingIno(b.String())
	if err != nil || len(entries) != 3 {
		t.Fatalf("ListTree(d, ino) = %q: %+v, %v", b.String(), entries, err)
	}
	for _, e := range entries {
		fi, err := os.Lstat(filepath.Join(root, e.Name))
		if err != nil {
			t.Fatal(err)
		}
		if want := fi.Sys().(*syscall.Stat_t).Ino; e.Ino != uint64(want) || e.Ino == 0 {
			t.Errorf("%s listed with inode %d; it is %d", e.Name, e.Ino, want)
		}
	}
}

// HasWhole checks a listed file against the tree's own: type, size,
// time to the second and permissions; a name leading out is never there.
func TestHasWhole(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "d/f", "d/sub/")
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chtimes(filepath.Join(root, "d/f"), when, when)
	os.Symlink("f", filepath.Join(root, "d/link"))
	d := openTree(t, root)
	f := framing.ListingEntry{Mode: 0o644, Size: 3, ModTime: when.Add(500 * time.Millisecond), Name: "d/f"}
	for _, c := range []struct {
		e    framing.ListingEntry
		want bool
	}{
		{f, true},
		{framing.ListingEntry{Mode: 0o600, Size: 3, ModTime: when, Name: "d/f"}, false},
		{framing.ListingEntry{Mode: 0o644, Size: 4, ModTime: when, Name: "d/f"}, false},
		{framing.ListingEntry{Mode: 0o644, Size: 3, ModTime: when.Add(time.Second), Name: "d/f"}, false},
		{framing.ListingEntry{Mode: 0o644, Size: 3, ModTime: when, Name: "d/link"}, false},
		{framing.ListingEntry{Mode: 0o755, Size: 4096, ModTime: when, Name: "d/sub"}, false},
		{framing.ListingEntry{Mode: 0o644, Size: 3, ModTime: when, Name: "../" + filepath.Base(root) + "/d/f"}, false},
		{framing.ListingEntry{Mode: 0o644, Size: 3, ModTime: when, Name: "d/none"}, false},
	} {
		if got := d.HasWhole(c.e); got != c.want {
			t.Errorf("HasWhole(%+v) = %v, want %v", c.e, got, c.want)
		}
	}
}

// A symbolic link planted where a file's partial goes is never followed,
// and the refusal says what is in the way and what to do.
func TestLinkWherePartialGoes(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "victim")
	os.WriteFile(target, []byte("keep"), 0o644)
	os.Symlink(target, filepath.Join(root, ".f"+filestore.PartSuffix))
	d := openTree(t, root)
	inc, err := d.Create("f")
	if err == nil {
		inc.Abort(false)
		t.Fatal("Create went through a link where the partial goes")
	}
	if !strings.Contains(err.Error(), "symbolic link where kerf keeps") || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("Create: %v; want words saying a link is in the way", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target changed: %q", b)
	}
}

// A directory where a file's partial goes: the refusal names it, not the
// file, which is no directory (QA: "openat pf: is a directory").
func TestDirectoryWherePartialGoes(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, ".f"+filestore.PartSuffix), 0o755)
	d := openTree(t, root)
	inc, err := d.Create("f")
	if err == nil {
		inc.Abort(false)
		t.Fatal("Create went through a directory where the partial goes")
	}
	if !strings.Contains(err.Error(), ".f"+filestore.PartSuffix+" is a directory where kerf keeps") || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("Create: %v; want words saying a directory is in the way", err)
	}
}

// A rename refused for want of permission leaves an empty directory at
// the target alone: only os.Root's refusal of a directory there makes
// Rename clear an empty one first.
func TestRenameRefusedKeepsEmptyTarget(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "ro/d/", "dst/d/")
	os.Chmod(filepath.Join(root, "ro"), 0o555)
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "ro"), 0o755) })
	d := openTree(t, root)
	unprivileged(t, func() {
		if err := d.Rename("ro/d", "dst"); err == nil {
			t.Error("a directory moved out of a read-only one")
		}
	})
	if fi, err := os.Stat(filepath.Join(root, "dst/d")); err != nil || !fi.IsDir() {
		t.Errorf("the empty target directory is gone: %v", err)
	}
}
