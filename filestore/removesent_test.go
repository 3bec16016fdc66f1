package filestore_test

import (
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// RemoveSent removes a file a GET sent only while it is still the file
// listed: not after it changed, was replaced, or for a read-only user.
func TestRemoveSent(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, p string)
		want   string // "" removed, else part of the error
	}{
		{"unchanged", nil, ""},
		{"appended to", func(t *testing.T, p string) {
			f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString("more")
			f.Close()
		}, "changed"},
		{"rewritten, size and time put back", func(t *testing.T, p string) {
			fi, _ := os.Stat(p)
			os.WriteFile(p, []byte("HELLO"), 0o644)
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}, "changed"},
		{"replaced by another of its size and time", func(t *testing.T, p string) {
			fi, _ := os.Stat(p)
			os.WriteFile(p+".new", []byte("hello"), 0o644)
			os.Chtimes(p+".new", fi.ModTime(), fi.ModTime())
			os.Rename(p+".new", p)
		}, "replaced"},
		{"a link now", func(t *testing.T, p string) {
			os.Remove(p)
			os.Symlink("other", p)
		}, "not a regular file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			p := filepath.Join(root, "f.txt")
			os.WriteFile(p, []byte("hello"), 0o644)
			old := time.Now().Add(-time.Hour).Truncate(time.Second)
			os.Chtimes(p, old, old)
			d := openTree(t, root)
			f := matchOne(t, d, "f.txt")
			if tc.change != nil {
				time.Sleep(10 * time.Millisecond)
				tc.change(t, p)
			}
			err := d.RemoveSent(f)
			_, serr := os.Lstat(p)
			switch {
			case tc.want == "" && (err != nil || !os.IsNotExist(serr)):
				t.Errorf("RemoveSent: %v, file: %v; want it removed", err, serr)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || serr != nil):
				t.Errorf("RemoveSent: %v, file: %v; want it kept, %q", err, serr, tc.want)
			}
		})
	}

	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "f.txt"), []byte("x"), 0o644)
	d, _ := filestore.Open(root)
	defer d.Close()
	d.ReadOnly = true
	files, _ := d.Match("f.txt", false)
	if err := d.CanRemoveSent(); err == nil {
		t.Error("a read-only tree may remove what it sends")
	}
	if err := d.RemoveSent(files[0]); err == nil {
		t.Error("a read-only tree removed a file sent")
	}
}

// A GET's [!x] is the shell's negated class (QA: it matched x, as
// path.Match's class of '!' and 'x').
func TestMatchNegatedClass(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a.txt", "b.txt", "file1.txt", "file2.txt"} {
		os.WriteFile(filepath.Join(root, n), []byte(n), 0o644)
	}
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for spec, want := range map[string]string{"[!a].txt": "b.txt", "file[!1].txt": "file2.txt", "[^b].txt": "a.txt"} {
		files, err := d.Match(spec, false)
		if err != nil || len(files) != 1 || files[0].Name != want {
			var got []string
			for _, f := range files {
				got = append(got, f.Name)
			}
			t.Errorf("Match(%s) = %v, %v; want %s alone", spec, got, err, want)
		}
	}
}

// A link whose file a GET moved (RemoveSent) before the walk reached it
// is passed over, naming the file it went as; a link to a file gone
// otherwise fails as a link to nothing, as before (e2e: a get with four
// sessions failed now and then on a link another session's move left
// leading nowhere).
func TestLinkToARemovedSentFile(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"out/b.txt", "out/gone.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, n)), 0o755)
		os.WriteFile(filepath.Join(root, n), []byte("b\n"), 0o644)
	}
	for link, to := range map[string]string{"out/link.txt": "b.txt", "out/other.txt": "gone.txt", "top.txt": "out/b.txt", "abs-link.txt": filepath.Join(root, "out/b.txt")} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	d := openTree(t, root)
	d.Moved = new(kermit.MovedFiles)
	// Another user's session on the same tree: the move is not of its
	// scope, and its links to the file lead nowhere (QA ab).
	other := openTree(t, root)
	other.Moved = new(kermit.MovedFiles)
	b := matchOne(t, d, "out/b.txt")
	if err := d.RemoveSent(b); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "out/gone.txt"))
	for spec, want := range map[string]int{"out": 2, "*.txt": 2, "out/*.txt": 2} {
		listed, err := d.Match(spec, true)
		if err != nil {
			t.Fatalf("match %s: %v", spec, err)
		}
		got := map[string]error{}
		for _, f := range listed {
			if f.Open == nil {
				continue
			}
			r, err := f.Open()
			if r != nil {
				r.Close()
			}
			got[f.Name] = err
		}
		for name, err := range got {
			moved := strings.HasSuffix(name, "link.txt") || name == "top.txt"
			switch {
			case moved && (!errors.Is(err, kermit.ErrPassedOver) || !strings.Contains(err.Error(), "moved already (sent as "+b.Name)):
				t.Errorf("%s: %s: %v; want passed over, its file moved", spec, name, err)
			case !moved && (err == nil || errors.Is(err, kermit.ErrPassedOver)):
				t.Errorf("%s: %s: %v; want it failed, leading nowhere", spec, name, err)
			}
		}
		if len(got) != want {
			t.Errorf("%s: %d entries %v, want %d", spec, len(got), got, want)
		}
	}
	listed, err := other.Match("out", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range listed {
		if f.Open == nil {
			continue
		}
		r, err := f.Open()
		if r != nil {
			r.Close()
		}
		if errors.Is(err, kermit.ErrPassedOver) {
			t.Errorf("another session's %s: %v; want it failed, leading nowhere", f.Name, err)
		}
	}
}

// A link listed as its file, whose file someone removes before its
// turn, says so at its open: the link is there, its file is not (QA ab:
// said to be the link removed).
func TestLinkWhoseFileWentSaysSo(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "f.txt"), []byte("f\n"), 0o644)
	if err := os.Symlink("f.txt", filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	link := matchOne(t, openTree(t, root), "link.txt")
	os.Remove(filepath.Join(root, "f.txt"))
	_, err := link.Open()
	var gone *kermit.LinkTargetGone
	if !errors.As(err, &gone) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("open of a link whose file went: %v; want kermit.LinkTargetGone", err)
	}
}

// An absolute symbolic link into the tree is sent as its file, in a walk
// and named plainly, even with the tree's top named through a link; one
// leading out of the tree is still refused (QA ab: a get -r of a tree
// with such links exited 4, "leads outside your directory").
func TestAbsoluteLinkIntoTheTree(t *testing.T) {
	real := t.TempDir()
	os.MkdirAll(filepath.Join(real, "data/v2"), 0o755)
	os.WriteFile(filepath.Join(real, "data/v2/f.txt"), []byte("v2\n"), 0o644)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("secret\n"), 0o644)
	os.WriteFile(filepath.Join(real, "data/.g.txt.kerf-part"), []byte("partial\n"), 0o644)
	if err := os.Symlink(".g.txt.kerf-part", filepath.Join(real, "data/rel-to-part")); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"data/latest.txt": filepath.Join(real, "data/v2/f.txt"), "data/out.txt": outside,
		"data/part.txt": filepath.Join(real, "data/rel-to-part")} {
		if err := os.Symlink(to, filepath.Join(real, link)); err != nil {
			t.Fatal(err)
		}
	}
	via := filepath.Join(t.TempDir(), "via")
	if err := os.Symlink(real, via); err != nil {
		t.Fatal(err)
	}
	for _, top := range []string{real, via} {
		d, err := filestore.Open(top)
		if err != nil {
			t.Fatal(err)
		}
		for spec, recursive := range map[string]bool{"data": true, "data/latest.txt": false} {
			files, err := d.Match(spec, recursive)
			if err != nil {
				t.Fatalf("%s: match %s: %v", top, spec, err)
			}
			got := map[string]string{}
			for _, f := range files {
				if f.Open == nil {
					continue
				}
				r, err := f.Open()
				if err != nil {
					got[path.Base(f.Name)] = "error: " + err.Error()
					continue
				}
				b, _ := io.ReadAll(r)
				r.Close()
				got[path.Base(f.Name)] = string(b)
			}
			if got["latest.txt"] != "v2\n" {
				t.Errorf("%s: %s: latest.txt %q; want its file's bytes", top, spec, got["latest.txt"])
			}
			if v, ok := got["out.txt"]; recursive && (!ok || !strings.HasPrefix(v, "error:")) {
				t.Errorf("%s: %s: out.txt %q; want it refused", top, spec, v)
			}
			for _, n := range []string{"part.txt", "rel-to-part", ".g.txt.kerf-part"} {
				if v, ok := got[n]; ok && !strings.HasPrefix(v, "error:") {
					t.Errorf("%s: %s: %s %q: a partial served", top, spec, n, v)
				}
			}
		}
		d.Close()
	}
}

// matchOne is the one file spec names in d.
func matchOne(t *testing.T, d *filestore.Dir, spec string) kermit.OutgoingFile {
	t.Helper()
	files, err := d.Match(spec, false)
	if err != nil || len(files) != 1 {
		t.Fatalf("match %s: %v %v", spec, files, err)
	}
	return files[0]
}
