package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// localFiles sends what it can of a tree and turns everything else into
// files that fail to open, so that the engine reports each as not sent
// while the rest go. (Regressions: a link to a directory named on the
// command line sent nothing and exited 0; an unreadable directory or a
// missing source stopped the whole send; "send -r .." sent names
// beginning "../"; a directory holding only a fifo was not made.)
// FIFOs and links to directories inside a tree are passed over, as a
// kerf server's GET -r passes them over. The same whether the listing
// is kept or, past keepListed entries, walked again as it is sent.
func TestLocalFiles(t *testing.T) {
	t.Run("kept", testLocalFiles)
	defer func(n int) { keepListed = n }(keepListed)
	keepListed = 1
	t.Run("walked again", testLocalFiles)
}

func testLocalFiles(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, data string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("tree/a.txt", "a")
	mk("tree/sub/b.txt", "b")
	mk("other/a.txt", "second a")
	mk("tree2/sub/b.txt", "second sub/b")
	mk("tree/.d.kerf-part/inner", "under a directory named as a partial")
	for _, d := range []string{"tree/emptydir/inner", "tree/onlyfifo"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "tree/onlyfifo/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"tree/deadlink": "nowhere", "tree/dirlink": "sub", "tree/filelink": "a.txt", "treelink": "tree"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	// dirs are the directories every kerf peer gets (nothing sent under
	// them); filled, those only a peer keeping directory attributes gets.
	// skipped: the base names of what the walk passed over.
	type want struct{ sent, dirs, filled, failed, skipped []string }
	check := func(t *testing.T, args []string, w want) {
		t.Helper()
		files, total, skipped, err := localFiles(args, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got want
		var size int64
		seen := map[string]bool{}
		for _, f := range files {
			// A directory comes before what is in it, with its details.
			if d := path.Dir(f.Name); d != "." && !seen[d] {
				if slices.Contains(w.filled, d) || slices.Contains(w.dirs, d) {
					t.Errorf("%s comes before its directory %s", f.Name, d)
				}
			}
			seen[f.Name] = true
			if f.Dir && (f.ModTime.IsZero() || !f.ModeKnown || f.Mode != 0o755) {
				t.Errorf("directory %s: time %v, mode %v (known %v), want its own", f.Name, f.ModTime, f.Mode, f.ModeKnown)
			}
			switch {
			case f.Dir && f.Filled:
				got.filled = append(got.filled, f.Name)
			case f.Dir:
				got.dirs = append(got.dirs, f.Name)
			default:
				r, err := f.Open()
				if err != nil {
					got.failed = append(got.failed, f.Name)
					// The report puts the name before it (QA:
					// "t/dangling: t/dangling: symbolic link ...").
					if strings.HasSuffix(f.Name, "deadlink") && strings.Count(err.Error(), "deadlink:") > 1 {
						t.Errorf("%s: %q names it twice", f.Name, err)
					}
					continue
				}
				r.Close()
				got.sent = append(got.sent, f.Name)
				size += f.Size
			}
		}
		for _, l := range []*[]string{&got.sent, &got.dirs, &got.filled, &got.failed, &w.sent, &w.dirs, &w.filled, &w.failed} {
			slices.Sort(*l)
		}
		if !slices.Equal(got.sent, w.sent) || !slices.Equal(got.dirs, w.dirs) || !slices.Equal(got.filled, w.filled) || !slices.Equal(got.failed, w.failed) {
			t.Errorf("localFiles(%q):\n sent %q, want %q\n dirs %q, want %q\n filled %q, want %q\n failed %q, want %q",
				args, got.sent, w.sent, got.dirs, w.dirs, got.filled, w.filled, got.failed, w.failed)
		}
		if size != total {
			t.Errorf("total %d, want %d", total, size)
		}
		var bases []string
		for _, sk := range skipped {
			bases = append(bases, filepath.Base(sk.path))
			if sk.why == "" {
				t.Errorf("%s skipped without a reason", sk.path)
			}
		}
		slices.Sort(bases)
		slices.Sort(w.skipped)
		if !slices.Equal(bases, w.skipped) {
			t.Errorf("skipped %q, want %q", bases, w.skipped)
		}
	}
	tree := want{
		sent:    []string{"tree/a.txt", "tree/sub/b.txt", "tree/filelink"},
		dirs:    []string{"tree/emptydir/inner", "tree/onlyfifo"},
		filled:  []string{"tree", "tree/emptydir", "tree/sub"},
		failed:  []string{"tree/deadlink"},
		skipped: []string{"dirlink", "fifo", ".d.kerf-part"},
	}
	t.Run("tree", func(t *testing.T) { check(t, []string{filepath.Join(dir, "tree")}, tree) })
	t.Run("tree named with extra separators", func(t *testing.T) {
		// Names as from a clean path: what the walk gives under root is
		// cut after it, not worked out again (walkTree's nameOf).
		check(t, []string{dir + "//tree/"}, tree)
		check(t, []string{dir + "/./tree//"}, tree)
	})
	t.Run("link to the tree", func(t *testing.T) {
		w := tree
		w.sent = []string{"treelink/a.txt", "treelink/sub/b.txt", "treelink/filelink"}
		w.dirs = []string{"treelink/emptydir/inner", "treelink/onlyfifo"}
		w.filled = []string{"treelink", "treelink/emptydir", "treelink/sub"}
		w.failed = []string{"treelink/deadlink"}
		check(t, []string{filepath.Join(dir, "treelink")}, w)
	})
	t.Run("contents of dot and dot-dot", func(t *testing.T) {
		w := want{sent: []string{"a.txt", "sub/b.txt", "filelink"}, dirs: []string{"emptydir/inner", "onlyfifo"},
			filled: []string{"emptydir", "sub"}, failed: []string{"deadlink"}, skipped: []string{"dirlink", "fifo", ".d.kerf-part"}}
		check(t, []string{filepath.Join(dir, "tree") + "/."}, w)
		check(t, []string{filepath.Join(dir, "tree/sub") + "/.."}, w)
	})
	t.Run("missing source and two of one name", func(t *testing.T) {
		check(t, []string{filepath.Join(dir, "tree/a.txt"), filepath.Join(dir, "missing"), filepath.Join(dir, "other/a.txt")},
			want{sent: []string{"a.txt"}, failed: []string{"missing", "a.txt"}})
	})
	t.Run("two trees' contents with a name in both", func(t *testing.T) {
		// A second file of a name deep in the trees, the directories
		// of both sent.
		w := want{sent: []string{"a.txt", "sub/b.txt", "filelink"}, dirs: []string{"emptydir/inner", "onlyfifo"},
			filled: []string{"emptydir", "sub", "sub"}, failed: []string{"deadlink", "sub/b.txt"}, skipped: []string{"dirlink", "fifo", ".d.kerf-part"}}
		check(t, []string{filepath.Join(dir, "tree") + "/.", filepath.Join(dir, "tree2") + "/."}, w)
	})
	t.Run("a FIFO named", func(t *testing.T) {
		check(t, []string{filepath.Join(dir, "tree/a.txt"), filepath.Join(dir, "tree/onlyfifo/fifo")},
			want{sent: []string{"a.txt"}, failed: []string{"fifo"}})
	})
	t.Run("nothing sendable", func(t *testing.T) {
		if _, _, _, err := localFiles([]string{filepath.Join(dir, "missing")}, false, nil); err == nil {
			t.Error("no error when no source can be sent")
		}
		// Several reasons make one line (the error is printed quoted).
		_, _, _, err := localFiles([]string{filepath.Join(dir, "missing"), filepath.Join(dir, "missing2")}, false, nil)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "missing2") {
			t.Errorf("two unsendable sources: %q; want one line naming both", err)
		}
		// Many: the first reasons and a count (a tree of a million
		// unreadable files makes no million-reason line).
		var many []string
		for i := range 12 {
			many = append(many, filepath.Join(dir, fmt.Sprintf("gone%02d", i)))
		}
		_, _, _, err = localFiles(many, false, nil)
		if err == nil || !strings.Contains(err.Error(), "gone09") || strings.Contains(err.Error(), "gone10") || !strings.HasSuffix(err.Error(), "; and 2 more") {
			t.Errorf("twelve unsendable sources: %q; want the first ten and \"and 2 more\"", err)
		}
	})
}

// A file that is not a regular one is named by its kind in messages,
// not by a mode string ("p---------" for a FIFO).
func TestUnsendableNamedByKind(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "ok"), []byte("x"), 0o644)
	files, _, _, err := localFiles([]string{fifo, filepath.Join(dir, "ok")}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name != "fifo" {
			continue
		}
		_, err := f.Open()
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
			t.Fatalf("opening the FIFO's entry: %v", err)
		}
		return
	}
	t.Fatalf("no entry for the FIFO in %+v", files)
}
