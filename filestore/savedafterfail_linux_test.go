package filestore_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kerf/filestore"
	"kerf/kermit"
)

// A batch file that could not be named over an older file of its name
// is not Saved, though a regular file is there under that name and no
// temporary one: the older file's content is not what was received. The
// older file, made while the batch is under way, is immutable (root
// only), so that the rename over it fails; named and unnamed receptions
// alike.
func TestSavedNotTheFileItFailedToReplace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file immutable")
	}
	for _, unnamed := range []int64{0, filestore.NetUnnamedMax} {
		root := t.TempDir()
		old := filepath.Join(root, "a")
		d, _ := filestore.Open(root)
		d.UnnamedMax = unnamed
		d.BeginBatch()
		for _, n := range []string{"a", "b"} {
			in, err := d.Create(n)
			if err != nil {
				t.Fatal(err)
			}
			// Its size told, as the engine tells it: small enough
			// to go unnamed when UnnamedMax allows.
			if err := in.(kermit.SizeHinted).WillHold(5, false); err != nil {
				t.Fatal(err)
			}
			in.WriteAt([]byte("new "+n), 0)
			if err := in.Commit(time.Now(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Made after the directory was listed, as another writer's
		// file: an unnamed file meets it only when it is linked.
		if err := os.WriteFile(old, []byte("old content"), 0o644); err != nil {
			t.Fatal(err)
		}
		setImmutable(t, old, true)
		err := d.EndBatch()
		setImmutable(t, old, false)
		if err == nil {
			t.Errorf("UnnamedMax %d: EndBatch: nil, want the rename over the immutable a refused", unnamed)
		}
		if d.Saved("a") {
			t.Errorf("UnnamedMax %d: a Saved, though it holds %q", unnamed, readFile(t, old))
		}
		if !d.Saved("b") {
			t.Errorf("UnnamedMax %d: b not Saved, though it was named", unnamed)
		}
		d.Close()
	}
}

func setImmutable(t *testing.T, p string, on bool) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Skipf("file attributes not supported here: %v", err)
	}
	if on {
		flags |= fsImmutableFL
	} else {
		flags &^= fsImmutableFL
	}
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags)); err != nil {
		t.Fatalf("setting the immutable flag: %v", err)
	}
}

func readFile(t *testing.T, p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// fsImmutableFL is FS_IMMUTABLE_FL of linux/fs.h (not in x/sys/unix).
const fsImmutableFL = 0x00000010
