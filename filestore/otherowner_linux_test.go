package filestore_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/internal/testproc"
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
	root := testproc.WorldDir(t, "kerf-other-owner-")
	shared := filepath.Join(root, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o777)
	os.Chown(shared, 65533, 65533)
	before, _ := os.Stat(shared)
	testproc.RerunAs(t, root, testproc.Nobody, "TestSetDirAttrsLeavesOthersDirectories", "KERF_TEST_OTHER_OWNER="+root)
	after, _ := os.Stat(shared)
	if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("shared changed: %v %v, was %v %v", after.Mode(), after.ModTime(), before.Mode(), before.ModTime())
	}
}
