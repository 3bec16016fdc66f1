package filestore

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// mountFAT mounts a fresh 32 MiB FAT through fusefat (FUSE) for the test
// and returns where. Needs root, mkfs.vfat (dosfstools) and fusefat; CI
// installs them, and there a missing one fails the test.
func mountFAT(t *testing.T) string {
	t.Helper()
	tools := needTools(t, "mkfs.vfat (dosfstools)", "fusefat")
	img, fusefat := fsImage(t, tools[0], 32<<20), tools[1]
	mnt := t.TempDir()
	if out, err := exec.Command(fusefat, "-o", "rw+", img, mnt).CombinedOutput(); err != nil {
		t.Fatalf("fusefat: %v: %s", err, out)
	}
	unmountAtCleanup(t, mnt)
	return mnt
}

// A file received into fusefat keeps the time it was sent with (to
// FAT's 2 s), alone and in a batch: fusefat gave a file renamed while
// open the time of its close, and each --resume sent every file again.
func TestFUSEFileKeepsItsTime(t *testing.T) {
	mnt := mountFAT(t)
	d, err := Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	mt := time.Date(2021, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	receive := func(name string) {
		in, err := d.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		in.WriteAt([]byte(name), 0)
		if err := in.Commit(mt, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	receive("alone.txt")
	d.BeginBatch()
	receive("batched.txt")
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alone.txt", "batched.txt"} {
		fi, err := os.Stat(filepath.Join(mnt, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.ModTime(); got.After(mt) || mt.Sub(got) >= 2*time.Second {
			t.Errorf("%s: time %v, sent %v", name, got.UTC(), mt)
		}
	}
}
