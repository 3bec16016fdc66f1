//go:build linux

package filestore

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// receiveUnnamed receives name with data into a new Dir on root, as a
// network receiver's small file (unnamed), runs beforeCommit, and
// commits it.
func receiveUnnamed(t *testing.T, root, name, data string, beforeCommit func()) error {
	t.Helper()
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.UnnamedMax = NetUnnamedMax
	in, err := d.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.(*incoming).WillHold(int64(len(data)), false); err != nil {
		t.Fatal(err)
	}
	if !in.(*incoming).unnamed {
		t.Fatal("not received unnamed")
	}
	if _, err := in.WriteAt([]byte(data), 0); err != nil {
		t.Fatal(err)
	}
	beforeCommit()
	return in.Commit(time.Time{}, 0o644)
}

// Where the kernel refuses linkat with AT_EMPTY_PATH, an unnamed file is
// linked through /proc/self/fd; a directory gone is no such refusal.
func TestUnnamedLinkWays(t *testing.T) {
	defer emptyPathRefused.Store(emptyPathRefused.Load())
	for _, refused := range []bool{false, true} {
		emptyPathRefused.Store(refused)
		root := t.TempDir()
		if err := receiveUnnamed(t, root, "sub/f", "data", func() {}); err != nil {
			t.Fatalf("refused=%v: %v", refused, err)
		}
		if b, err := os.ReadFile(filepath.Join(root, "sub/f")); err != nil || string(b) != "data" {
			t.Fatalf("refused=%v: %q %v", refused, b, err)
		}
		if emptyPathRefused.Load() != refused {
			t.Errorf("refused=%v: now %v", refused, emptyPathRefused.Load())
		}
	}
	emptyPathRefused.Store(false)
	root := t.TempDir()
	removeDir := func() {
		// The directory removed under the file before it is linked.
		if err := os.Remove(filepath.Join(root, "gone")); err != nil {
			t.Fatal(err)
		}
	}
	if err := receiveUnnamed(t, root, "gone/f", "data", removeDir); err == nil {
		t.Fatal("committed into a removed directory")
	}
	if emptyPathRefused.Load() {
		t.Error("a removed directory was taken for the kernel's refusal of AT_EMPTY_PATH")
	}
}
