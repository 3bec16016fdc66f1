package filestore

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// receiveAll receives each name (its content the name itself) through
// d in one batch, as a group does, and returns each one's error, the
// batch's included.
func receiveAll(t *testing.T, d *Dir, names ...string) map[string]error {
	t.Helper()
	errs := make(map[string]error)
	d.BeginBatch()
	for _, name := range names {
		in, err := d.Create(name)
		if err != nil {
			errs[name] = err
			continue
		}
		in.WriteAt([]byte(name), 0)
		if err := in.Commit(time.Now(), 0o644); err != nil {
			errs[name] = err
			in.Abort(true)
		}
	}
	if err := d.EndBatch(); err != nil {
		errs["batch"] = err
	}
	return errs
}

// In a directory that tells case apart both names are stored, and the
// set keeps no name (the probe found it so).
func TestCaseSensitiveDirectoryKeepsBoth(t *testing.T) {
	root := t.TempDir()
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if errs := receiveAll(t, d, "A.txt", "a.txt", "sub/B", "sub/b"); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	for _, name := range []string{"A.txt", "a.txt", "sub/B", "sub/b"} {
		if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(got) != name {
			t.Errorf("%s: %q %v", name, got, err)
		}
	}
	f := d.folds()
	if f.folds["."] || f.folds["sub"] || len(f.entries) != 0 {
		t.Errorf("folds %v entries %v: a case-sensitive directory taken for folding", f.folds, f.entries)
	}
}

// Where the directory folds case (as found by the probe), the second of
// two names that differ only in case is refused, not stored over the
// first; the same name again is a file replaced, as anywhere.
func TestFoldingDirectoryRefusesTheSecondCase(t *testing.T) {
	root := t.TempDir()
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.folds().folds = map[string]bool{".": true, "Photos": true, "photos": true}
	d.folds().entries = map[string]map[string]foldEntry{".": {}, "photos": {}}
	errs := receiveAll(t, d, "A.txt", "a.txt", "Photos/img", "photos/img", "photos/other")
	for _, name := range []string{"a.txt", "photos/img"} {
		if errs[name] == nil && errs["batch"] == nil {
			t.Errorf("%s stored over its case twin", name)
		}
	}
	if e := errs["batch"]; e == nil || !strings.Contains(e.Error(), "differ only in case") {
		t.Errorf("the batch's error %v does not say why", e)
	}
	if _, err := os.Stat(filepath.Join(root, "a.txt")); err == nil {
		t.Error("a.txt stored")
	}
	if got, _ := os.ReadFile(filepath.Join(root, "photos/other")); string(got) != "photos/other" {
		t.Errorf("photos/other: %q", got)
	}
	if errs := receiveAll(t, d, "A.txt"); len(errs) > 0 {
		t.Errorf("the same name again: %v", errs)
	}
}

// On a real exFAT (FUSE), A.txt then a.txt: the first stays whole, the
// second is refused (QA ad: the second replaced the first, both
// reported saved). Needs root, exfatprogs and exfat-fuse; CI installs
// them, and there a missing one fails the test.
func TestExFATCaseTwinIsRefused(t *testing.T) {
	mkfs, err1 := exec.LookPath("mkfs.exfat")
	mount, err2 := exec.LookPath("mount.exfat-fuse")
	if err1 != nil || err2 != nil || os.Geteuid() != 0 {
		msg := "needs root, mkfs.exfat (exfatprogs) and mount.exfat-fuse (exfat-fuse)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + "; CI=true, so missing is a failure")
		}
		t.Skip(msg)
	}
	img := filepath.Join(t.TempDir(), "exfat.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.exfat: %v: %s", err, out)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	mnt := t.TempDir()
	if out, err := exec.Command(mount, dev, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount.exfat-fuse: %v: %s", err, out)
	}
	t.Cleanup(func() {
		for range 50 {
			if exec.Command("umount", mnt).Run() == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("umount %s failed", mnt)
	})
	d, err := Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	errs := receiveAll(t, d, "A.txt", "a.txt", "c.txt")
	d.Close()
	if errs["a.txt"] == nil && errs["batch"] == nil {
		t.Error("a.txt reported stored")
	}
	// Another transfer (a --resume that found A.txt there and passed it
	// over) brings a.txt alone: refused too, A.txt there before.
	d2, err := Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	errs2 := receiveAll(t, d2, "a.txt")
	d2.Close()
	if e := fmt.Sprint(errs2["a.txt"], errs2["batch"]); !strings.Contains(e, "there before") {
		t.Errorf("a.txt alone, A.txt there: %v", errs2)
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "A.txt")); err != nil || !bytes.Equal(got, []byte("A.txt")) {
		t.Errorf("A.txt holds %q (%v): replaced by its case twin", got, err)
	}
	if got, _ := os.ReadFile(filepath.Join(mnt, "c.txt")); string(got) != "c.txt" {
		t.Errorf("c.txt: %q", got)
	}
}
