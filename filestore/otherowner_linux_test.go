package filestore_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"kerf/filestore"
)

// A server that is not root receiving a tree into a shared directory of
// someone else's (group-writable) leaves that directory's mode and time
// alone, and that is no failure: its files all arrived. Run as a child
// process with another user id, the only way a root test run has to be
// someone else.
func TestSetDirAttrsLeavesOthersDirectories(t *testing.T) {
	if dir := os.Getenv("KERF_TEST_OTHER_OWNER"); dir != "" {
		d, err := filestore.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.SetDirAttrs("shared", 0o700, true, time.Unix(1e9, 0)); err != nil {
			t.Fatalf("SetDirAttrs on someone else's directory: %v", err)
		}
		return
	}
	if os.Geteuid() != 0 {
		// Not root: root's /etc is someone else's directory already.
		// (As root this would change /etc: the child process below.)
		d := openTree(t, "/")
		before, err := os.Stat("/etc")
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetDirAttrs("etc", 0o700, true, time.Unix(1e9, 0)); err != nil {
			t.Fatalf("SetDirAttrs on someone else's directory: %v", err)
		}
		if after, _ := os.Stat("/etc"); after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
			t.Errorf("/etc changed")
		}
		return
	}
	// Not t.TempDir, nor the test binary where it is: their parents are
	// private to root.
	root, err := os.MkdirTemp("", "kerf-other-owner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o777)
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	test := filepath.Join(root, "filestore.test")
	if err := os.WriteFile(test, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(root, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o777)
	os.Chown(shared, 65533, 65533)
	before, _ := os.Stat(shared)
	cmd := exec.Command(test, "-test.run", "^TestSetDirAttrsLeavesOthersDirectories$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KERF_TEST_OTHER_OWNER="+root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
	after, _ := os.Stat(shared)
	if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("shared changed: %v %v, was %v %v", after.Mode(), after.ModTime(), before.Mode(), before.ModTime())
	}
}
