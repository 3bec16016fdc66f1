package filestore_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kerf/filestore"
)

// A file that cannot be made for want of inodes says so, not only "no
// space left" while the disk is nearly empty (QA ad). On a tmpfs of 8
// inodes (mounting it needs root).
func TestNoInodesSaysSo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs with few inodes")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m,nr_inodes=8", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	d, err := filestore.Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range 20 {
		in, err := d.Create(fmt.Sprintf("f%d", i))
		if err == nil {
			in.WriteAt([]byte("x"), 0)
			err = in.Commit(time.Now(), 0o644)
		}
		if err != nil {
			if !errors.Is(err, unix.ENOSPC) || !strings.Contains(err.Error(), "no inodes left") {
				t.Fatalf("file %d: %v; want ENOSPC said to be for inodes", i, err)
			}
			return
		}
	}
	t.Fatal("20 files made in 8 inodes")
}
