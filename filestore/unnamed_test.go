//go:build linux

package filestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// unnamedDir opens root with small files received unnamed, as a network
// receiver does.
func unnamedDir(t *testing.T, root string) *filestore.Dir {
	t.Helper()
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	d.UnnamedMax = filestore.NetUnnamedMax
	t.Cleanup(func() { d.Close() })
	return d
}

// begin creates name, tells it its size as the engine does, and writes
// data.
func begin(t *testing.T, d *filestore.Dir, name string, data string, resume bool) kermit.Incoming {
	t.Helper()
	in, err := d.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.(kermit.SizeHinted).WillHold(int64(len(data)), resume); err != nil {
		t.Fatal(err)
	}
	if err := in.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := in.WriteAt([]byte(data), 0); err != nil {
		t.Fatal(err)
	}
	return in
}

// A small file is received with no name at all until it is complete:
// nothing shows in its directory meanwhile, and once committed it is
// there with its data, mode and time, alone (no partial left).
func TestSmallFileReceivedUnnamed(t *testing.T) {
	root := t.TempDir()
	d := unnamedDir(t, root)
	in := begin(t, d, "sub/a.bin", "hello", false)
	if got := entries(t, filepath.Join(root, "sub")); len(got) != 0 {
		t.Fatalf("while received, the directory holds %v, want nothing", got)
	}
	mt := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	if err := in.Commit(mt, 0o640); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, filepath.Join(root, "sub")); !slices.Equal(got, []string{"a.bin"}) {
		t.Fatalf("after the commit: %v", got)
	}
	checkFile(t, filepath.Join(root, "sub/a.bin"), "hello")
	fi, _ := os.Stat(filepath.Join(root, "sub/a.bin"))
	if fi.Mode().Perm() != 0o640 || !fi.ModTime().Equal(mt) {
		t.Errorf("mode %v time %v, want 0640 %v", fi.Mode(), fi.ModTime(), mt)
	}

	// In a batch, the files get their names at its end.
	d.BeginBatch()
	for _, n := range []string{"b1", "b2", "b3"} {
		if err := begin(t, d, "sub/"+n, n+" data", false).Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := entries(t, filepath.Join(root, "sub")); !slices.Equal(got, []string{"a.bin"}) {
		t.Errorf("before the batch's end: %v", got)
	}
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"b1", "b2", "b3"} {
		checkFile(t, filepath.Join(root, "sub", n), n+" data")
	}
	if got := entries(t, filepath.Join(root, "sub")); len(got) != 4 {
		t.Errorf("after the batch: %v", got)
	}
}

// A file too big to lose to a crash, of unknown size, to be resumed, or
// never told its size, takes the temporary name, which shows while it
// is received (and is what a resume finds).
func TestUnnamedNotForBigResumedOrUntold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int64
		resume bool
		untold bool
	}{
		{"big", filestore.NetUnnamedMax + 1, false, false},
		{"unknown", -1, false, false},
		{"resumed", 10, true, false},
		{"untold", 10, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			d := unnamedDir(t, root)
			in, err := d.Create("f")
			if err != nil {
				t.Fatal(err)
			}
			if !tc.untold {
				if err := in.(kermit.SizeHinted).WillHold(tc.size, tc.resume); err != nil {
					t.Fatal(err)
				}
			}
			if err := in.Truncate(0); err != nil {
				t.Fatal(err)
			}
			in.WriteAt([]byte("data"), 0)
			if got := entries(t, root); !slices.Equal(got, []string{filestore.TempName("f")}) {
				t.Fatalf("while received: %v, want the temporary name", got)
			}
			if err := in.Commit(time.Time{}, 0o644); err != nil {
				t.Fatal(err)
			}
			checkFile(t, filepath.Join(root, "f"), "data")
			if got := entries(t, root); !slices.Equal(got, []string{"f"}) {
				t.Errorf("after the commit: %v", got)
			}
		})
	}
}

// Where the name is taken, or a partial of it lies, the file takes the
// temporary name: the old file is replaced as before, and the partial is
// used (not left behind).
func TestUnnamedNotWhereTheNameIs(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "x"), []byte("old x"), 0o644)
	os.WriteFile(filepath.Join(root, filestore.TempName("y")), []byte("an old partial"), 0o600)
	d := unnamedDir(t, root)
	x := begin(t, d, "x", "new x", false)
	y := begin(t, d, "y", "new y", false)
	if got := entries(t, root); !slices.Equal(got, []string{filestore.TempName("x"), filestore.TempName("y"), "x"}) {
		t.Fatalf("while received: %v, want both temporary names", got)
	}
	for _, in := range []kermit.Incoming{x, y} {
		if err := in.Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkFile(t, filepath.Join(root, "x"), "new x")
	checkFile(t, filepath.Join(root, "y"), "new y")
	if got := entries(t, root); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("after the commits: %v", got)
	}
	// A name received once in this Dir is taken now: a second file of
	// it replaces the first the usual way.
	again := begin(t, d, "x", "newer x", false)
	if got := entries(t, root); !slices.Contains(got, filestore.TempName("x")) {
		t.Errorf("second x while received: %v, want its temporary name", got)
	}
	if err := again.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(root, "x"), "newer x")
}

// An unnamed file ended before it is complete leaves nothing: neither a
// partial (it is small, and sent again whole) nor the final name.
func TestUnnamedAbortLeavesNothing(t *testing.T) {
	for _, keep := range []bool{false, true} {
		root := t.TempDir()
		d := unnamedDir(t, root)
		in := begin(t, d, "a", "part of it", false)
		if err := in.Abort(keep); err != nil {
			t.Fatal(err)
		}
		if got := entries(t, root); len(got) != 0 {
			t.Errorf("keep=%v: left %v", keep, got)
		}
	}
}

// A name taken after the directory was listed (by someone else) is met
// at the commit as the rename of a temporary name meets it: a file there
// is replaced by the received one, whole; a directory or a symbolic link
// refuses the file and stays as it was; and nothing of the received file
// is left behind.
func TestUnnamedNameTakenMeanwhile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		plant   func(p string) error
		wantErr string // "" : the commit succeeds
	}{
		{"file", func(p string) error { return os.WriteFile(p, []byte("someone else's"), 0o644) }, ""},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "is a directory"},
		{"symlink", func(p string) error { return os.Symlink("/etc/passwd", p) }, "not a regular file (a symbolic link)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			d := unnamedDir(t, root)
			in := begin(t, d, "x", "received", false)
			if err := tc.plant(filepath.Join(root, "x")); err != nil {
				t.Fatal(err)
			}
			err := in.Commit(time.Time{}, 0o644)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkFile(t, filepath.Join(root, "x"), "received")
			} else {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("commit: %v, want %q", err, tc.wantErr)
				}
				if tc.name == "directory" && !errors.Is(err, syscall.EISDIR) {
					t.Errorf("commit: %v, want EISDIR", err)
				}
				in.Abort(true)
				fi, lerr := os.Lstat(filepath.Join(root, "x"))
				if lerr != nil || fi.Mode().IsRegular() {
					t.Errorf("what was planted changed: %v %v", fi, lerr)
				}
			}
			if got := entries(t, root); !slices.Equal(got, []string{"x"}) {
				t.Errorf("left: %v, want only x", got)
			}
		})
	}
}

// A directory this Dir makes for a file's path is in its parent's
// listing: a file of that name after it is refused at once, as before,
// not received and failed at the batch's end (review: a classic sender
// sending paths, "a/b" then "a", failed the whole group).
func TestUnnamedDirectoryMadeForAPathIsListed(t *testing.T) {
	root := t.TempDir()
	d := unnamedDir(t, root)
	d.BeginBatch()
	for _, n := range []string{"z", "a/b"} {
		if err := begin(t, d, n, n, false).Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if in, err := d.Create("a"); err == nil {
		in.Abort(false)
		t.Error("a file named as the directory a/b made was taken")
	} else if !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Create(a): %v", err)
	}
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(root, "a/b"), "a/b")
}
