package filestore_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
	// Replaced by a link to another file in the tree: refused too, not
	// sent in its place under the matched name, size and time.
	os.Remove(filepath.Join(root, "a/kept.txt"))
	os.Symlink("../real/y.txt", filepath.Join(root, "a/kept.txt"))
	if got, err := a["a/kept.txt"](); err == nil {
		t.Errorf("a/kept.txt, now a link to real/y.txt, read %q", got)
	}
	os.Remove(filepath.Join(root, "a/kept.txt"))
	makeTree(t, root, "a/kept.txt")
	a = open("a", true)
	if got, err := a["a/kept.txt"](); err != nil || got != "a/kept.txt" {
		t.Errorf("a/kept.txt = %q, %v", got, err)
	}
	// Replaced by a new regular file (a new version renamed over it):
	// that one opens; the sender takes its size and time from it.
	fresh := open("a", true)
	os.WriteFile(filepath.Join(root, "a/new"), []byte("a/kept.txt, version 2"), 0o644)
	os.Rename(filepath.Join(root, "a/new"), filepath.Join(root, "a/kept.txt"))
	if got, err := fresh["a/kept.txt"](); err != nil || got != "a/kept.txt, version 2" {
		t.Errorf("a/kept.txt replaced by a new version = %q, %v", got, err)
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

// A directory renamed and made again under its old name: a later match
// and its files are the new directory's, whether the rename came from
// this Dir or from elsewhere; and a file a match found is the one read
// even if its directory is renamed before it is opened.
func TestOpenAfterDirectoryRenamed(t *testing.T) {
	root := t.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	read := func(spec, name string) string {
		t.Helper()
		files, err := d.Match(spec, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if f.Name == name {
				r, err := f.Open()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				defer r.Close()
				b, _ := io.ReadAll(r)
				return string(b)
			}
		}
		t.Fatalf("%s not matched", name)
		return ""
	}
	write := func(name, data string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/x", "first")
	if got := read("a", "a/x"); got != "first" {
		t.Fatalf("a/x = %q", got)
	}
	// Renamed from outside the Dir.
	os.Rename(filepath.Join(root, "a"), filepath.Join(root, "b"))
	write("a/x", "second")
	if got := read("a", "a/x"); got != "second" {
		t.Errorf("after a was renamed outside and made again: a/x = %q, want second", got)
	}
	// Renamed through the Dir.
	if err := d.Rename("a", "c"); err != nil {
		t.Fatal(err)
	}
	write("a/x", "third")
	if got := read("a", "a/x"); got != "third" {
		t.Errorf("after Rename(a, c) and a made again: a/x = %q, want third", got)
	}
	// Matched, then its directory renamed and made again before Open:
	// the file read is the one matched.
	files, _ := d.Match("a", true)
	os.Rename(filepath.Join(root, "a"), filepath.Join(root, "e"))
	write("a/x", "fourth")
	if len(files) != 2 || !files[0].Dir || files[1].Name != "a/x" {
		t.Fatalf("Match(a, recursive) = %+v; want the directory a, then a/x", files)
	}
	r, err := files[1].Open()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "third" {
		t.Errorf("a/x matched as third, read %q", b)
	}
}

// A file received into a directory that was renamed through the Dir
// and made again lands in the new directory, not the renamed one.
func TestCreateAfterDirectoryRenamed(t *testing.T) {
	root := t.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	put := func(name string) {
		t.Helper()
		in, err := d.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		in.WriteAt([]byte(name), 0)
		if err := in.Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("a/f")
	if err := d.Rename("a", "b"); err != nil {
		t.Fatal(err)
	}
	put("a/g")
	if _, err := os.Stat(filepath.Join(root, "a", "g")); err != nil {
		t.Errorf("a/g: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "b", "g")); err == nil {
		t.Error("a/g landed in the renamed directory b")
	}
	// The same after a rename from outside, with a group (BeginBatch).
	os.Rename(filepath.Join(root, "a"), filepath.Join(root, "c"))
	d.BeginBatch()
	put("a/h")
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a", "h")); err != nil {
		t.Errorf("a/h: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "c", "h")); err == nil {
		t.Error("a/h landed in c, renamed from outside before the group")
	}
}

// A file swapped for a named pipe after it was listed fails to open at
// once, on both sides (a server's match, a client's OpenLocal); a
// named pipe where a partial goes fails that file only. Each used to
// block in open(2) for ever, or (the partial) fail the session.
func TestNamedPipeInAFilesPlace(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "p/served.txt", "p/local.txt")
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	files, err := d.Match("p/served.txt", false)
	if err != nil || len(files) != 1 {
		t.Fatalf("Match: %v, %v", files, err)
	}
	for _, name := range []string{"p/served.txt", "p/local.txt"} {
		os.Remove(filepath.Join(root, name))
		if err := syscall.Mkfifo(filepath.Join(root, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 2)
	go func() {
		r, err := files[0].Open()
		if err == nil {
			r.Close()
		}
		done <- err
	}()
	go func() {
		r, err := filestore.OpenLocal(filepath.Join(root, "p/local.txt"))
		if err == nil {
			r.Close()
		} else if !strings.Contains(err.Error(), "a named pipe") {
			err = fmt.Errorf("error without the pipe's kind: %w", err)
			t.Error(err)
		}
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if err == nil {
				t.Error("a named pipe opened as the file")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("opening a named pipe in a file's place blocks")
		}
	}
	// Where the partial goes.
	if err := syscall.Mkfifo(filepath.Join(root, "p", filestore.TempName("new.txt")), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := d.Create("p/new.txt")
	if err == nil {
		in.Abort(false)
		t.Fatal("a named pipe where the partial goes was taken")
	}
	if !strings.Contains(err.Error(), "a named pipe where kerf keeps the file's partial") {
		t.Errorf("Create: %v", err)
	}
}

// A link to a directory of the tree, named plainly in a recursive match,
// brings the directory's files under the link's name (as send -r does
// with a local one, and as "link/" does); without -r it is refused in
// words, and a named pipe is named as one.
func TestMatchLinkToDirectoryNamedPlainly(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "real/f.txt", "real/sub/g.txt")
	os.Symlink("real", filepath.Join(root, "lnk"))
	syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644)
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	files, err := d.Match("lnk", true)
	if err != nil {
		t.Fatalf("Match(lnk, -r): %v", err)
	}
	var names []string
	for _, f := range files {
		if !f.Dir {
			names = append(names, f.Name)
		}
	}
	if strings.Join(names, " ") != "lnk/f.txt lnk/sub/g.txt" {
		t.Errorf("Match(lnk, -r) = %q", names)
	}
	if _, err := d.Match("lnk", false); err == nil || !strings.Contains(err.Error(), "a link to a directory (use -r)") {
		t.Errorf("Match(lnk) without -r: %v", err)
	}
	if _, err := d.Match("pipe", true); err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
		t.Errorf("Match(pipe): %v", err)
	}
}

// A file opened at its turn is the one listed, or a regular file put at
// its very name since: not what a link listed then leads to now (a
// partial upload), nor a file reached through a directory turned into a
// link (review).
func TestReplacedFileOnlyAtItsOwnName(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "a", "sub/f", "sub2/f")
	os.Symlink("a", filepath.Join(root, "lnk"))
	d, _ := filestore.Open(root)
	defer d.Close()
	files, err := d.Match(".", true)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]func() (io.ReadCloser, error){}
	for _, f := range files {
		if f.Open != nil {
			byName[f.Name] = func() (io.ReadCloser, error) { return f.Open() }
		}
	}
	for _, n := range []string{"lnk", "sub/f"} {
		if byName[n] == nil {
			t.Fatalf("%s not listed", n)
		}
	}
	part := filestore.TempName("upload.iso")
	os.WriteFile(filepath.Join(root, part), []byte("HALF OF AN UPLOAD"), 0o644)
	os.Remove(filepath.Join(root, "lnk"))
	os.Symlink(part, filepath.Join(root, "lnk"))
	if r, err := byName["lnk"](); err == nil {
		b, _ := io.ReadAll(r)
		r.Close()
		t.Errorf("lnk, repointed at a partial since it was listed, read %q", b)
	}
	os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "subold"))
	os.Symlink("sub2", filepath.Join(root, "sub"))
	if r, err := byName["sub/f"](); err == nil {
		b, _ := io.ReadAll(r)
		r.Close()
		t.Errorf("sub/f, its directory now a link to sub2, read %q", b)
	}
}

// A link to a link to a partial file is not served, as a link to a
// partial is not (review: only one level was read).
func TestLinkChainToPartialNotServed(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "ok")
	part := filestore.TempName("up.iso")
	os.WriteFile(filepath.Join(root, part), []byte("HALF"), 0o644)
	os.Symlink(part, filepath.Join(root, "l1"))
	os.Symlink("l1", filepath.Join(root, "l2"))
	os.Symlink("l2", filepath.Join(root, "l3"))
	d, _ := filestore.Open(root)
	defer d.Close()
	files, err := d.Match(".", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name == "l1" || f.Name == "l2" || f.Name == "l3" {
			t.Errorf("%s, a link (chain) to a partial, listed", f.Name)
		}
	}
	for _, n := range []string{"l2", "l3"} {
		if _, err := d.Match(n, false); err == nil {
			t.Errorf("GET %s, a link chain to a partial, matched", n)
		}
	}
}
