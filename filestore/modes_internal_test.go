package filestore

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A file system that refuses permission bits (vfat's EPERM, a FUSE
// file system's ENOSYS) still gets the files, under their names, with
// the refusal counted for a warning; other chmod errors still fail the
// file (QA ad: every file was left complete under its temporary name).
func TestModesRefusedStillStore(t *testing.T) {
	for _, refusal := range []error{unix.EPERM, unix.ENOSYS, unix.EOPNOTSUPP} {
		t.Run(refusal.Error(), func(t *testing.T) {
			fchmod = func(int, uint32) error { return refusal }
			fchmodat = func(int, string, uint32, int) error { return refusal }
			t.Cleanup(func() { fchmod, fchmodat = unix.Fchmod, unix.Fchmodat })
			root := t.TempDir()
			d, err := Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Mkdir("sub"); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"sub/a", "sub/b"} {
				in, err := d.Create(name)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := in.WriteAt([]byte(name), 0); err != nil {
					t.Fatal(err)
				}
				if err := in.Commit(time.Now(), 0o600); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || !bytes.Equal(got, []byte(name)) {
					t.Fatalf("%s: %q %v", name, got, err)
				}
			}
			if err := d.SetDirAttrs("sub", 0o700, true, time.Now()); err != nil {
				t.Fatalf("directory: %v", err)
			}
			if n, err := d.ModesNotKept(); n != 3 || err == nil || !strings.Contains(err.Error(), refusal.Error()) {
				t.Errorf("ModesNotKept = %d, %v; want 3 and %v", n, err, refusal)
			}
		})
	}
	t.Run("other errors fail", func(t *testing.T) {
		fchmod = func(int, uint32) error { return unix.EIO }
		t.Cleanup(func() { fchmod = unix.Fchmod })
		d, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		in, err := d.Create("c")
		if err != nil {
			t.Fatal(err)
		}
		in.WriteAt([]byte("c"), 0)
		if err := in.Commit(time.Now(), 0o600); err == nil {
			t.Fatal("committed through an I/O error")
		}
		in.Abort(false)
		if n, _ := d.ModesNotKept(); n != 0 {
			t.Errorf("ModesNotKept = %d after an I/O error", n)
		}
	})
}
