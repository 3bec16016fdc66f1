//go:build linux

package filestore_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kerf/filestore"
)

// checkUnnamedModes receives a file for each mode into dir (a
// directory under root, "." for root) through d and checks each comes
// out with its own, whichever way the commit took (the mode it was
// created with kept, or changed).
func checkUnnamedModes(t *testing.T, d *filestore.Dir, root, dir string) {
	t.Helper()
	for _, perm := range []fs.FileMode{0o644, 0o600, 0o755, 0o640, 0o000, 0o444} {
		name := filepath.Join(dir, fmt.Sprintf("m%03o", perm))
		if err := begin(t, d, name, "data", false).Commit(time.Time{}, perm); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != perm {
			t.Errorf("%s: mode %03o, want %03o", name, got, perm)
		}
	}
}

// A small file received unnamed gets the sender's mode, the usual 0644
// included, which it was created with (no chmod then), under this
// process's umask.
func TestUnnamedFileModes(t *testing.T) {
	root := t.TempDir()
	checkUnnamedModes(t, unnamedDir(t, root), root, ".")
}

// The same under umask 077, in a child process (the umask is the
// process's): created 0600 there, a 0644 file must still be made 0644,
// and a 0600 one is left as created.
func TestUnnamedFileModesUnderUmask077(t *testing.T) {
	if root := os.Getenv("KERF_TEST_UMASK_ROOT"); root != "" {
		if m := unix.Umask(0o077); m != 0o077 {
			t.Fatalf("the child runs under umask %03o, want 077", m)
		}
		checkUnnamedModes(t, unnamedDir(t, root), root, ".")
		fmt.Println("umask-child-checked")
		return
	}
	cmd := exec.Command("/bin/sh", "-c", `umask 077 && exec "$0" -test.run='^TestUnnamedFileModesUnderUmask077$' -test.v`, os.Args[0])
	cmd.Env = append(os.Environ(), "KERF_TEST_UMASK_ROOT="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "umask-child-checked") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// A directory's default ACL, not the umask, decides a new file's mode
// (here 0644 is created 0640): a file committed 0644 there must be made
// 0644 all the same, and in a directory beside it without one too.
func TestUnnamedFileModesUnderDefaultACL(t *testing.T) {
	top := t.TempDir()
	root := filepath.Join(top, "acl")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// user::rw- user:12345:r-- group::r-- mask::r-x other::---
	const undefined = 0xffffffff
	acl := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, 6, undefined}, {0x02, 4, 12345}, {0x04, 4, undefined}, {0x10, 5, undefined}, {0x20, 0, undefined}} {
		acl = binary.LittleEndian.AppendUint16(acl, e.tag)
		acl = binary.LittleEndian.AppendUint16(acl, e.perm)
		acl = binary.LittleEndian.AppendUint32(acl, e.id)
	}
	if err := unix.Setxattr(root, "system.posix_acl_default", acl, 0); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			t.Skipf("no POSIX ACLs on the file system of %s: %v", root, err)
		}
		t.Fatal(err)
	}
	// The ACL does what the test needs: a plain create under it.
	probe := filepath.Join(root, "probe")
	f, err := os.OpenFile(probe, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, _ := os.Stat(probe); fi.Mode().Perm() != 0o640 {
		t.Fatalf("a file created 0644 under the default ACL is %03o, want 0640", fi.Mode().Perm())
	}
	os.Remove(probe)
	d := unnamedDir(t, top)
	checkUnnamedModes(t, d, top, ".")
	checkUnnamedModes(t, d, top, "acl")
	checkUnnamedModes(t, d, top, ".")
}
