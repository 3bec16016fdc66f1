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
	// Refused at Create, before their data (review 53: after it, a
	// complete partial was left for a resume to store over the first).
	for _, name := range []string{"a.txt", "photos/img"} {
		if e := errs[name]; e == nil || !strings.Contains(e.Error(), "differ only in case") {
			t.Errorf("%s: %v; want it refused as its twin's case", name, e)
		}
	}
	if e := errs["batch"]; e != nil {
		t.Errorf("the batch: %v", e)
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

// mountExFAT mounts a fresh 16 MiB exFAT (FUSE) for the test and
// returns where. Needs root, exfatprogs and exfat-fuse; CI installs
// them, and there a missing one fails the test.
func mountExFAT(t *testing.T) string {
	t.Helper()
	tools := needTools(t, "mkfs.exfat (exfatprogs)", "mount.exfat-fuse (exfat-fuse)")
	img := fsImage(t, tools[0], 16<<20)
	mount := tools[1]
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
	unmountAtCleanup(t, mnt)
	return mnt
}

// needTools finds each program named (its package in brackets after
// it) and returns their paths, or skips the test, which needs root too;
// with CI=true a missing one fails it.
func needTools(t *testing.T, named ...string) []string {
	t.Helper()
	var paths []string
	for _, n := range named {
		p, err := exec.LookPath(strings.Fields(n)[0])
		if err != nil || os.Geteuid() != 0 {
			msg := "needs root and " + strings.Join(named, ", ")
			if os.Getenv("CI") == "true" {
				t.Fatal(msg + "; CI=true, so missing is a failure")
			}
			t.Skip(msg)
		}
		paths = append(paths, p)
	}
	return paths
}

// fsImage is a file of size bytes made into a file system by mkfs.
func fsImage(t *testing.T, mkfs string, size int64) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "fs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, img).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", mkfs, err, out)
	}
	return img
}

// unmountAtCleanup unmounts mnt when the test ends (a FUSE daemon may
// still hold it for a moment), lazily if it will not go.
func unmountAtCleanup(t *testing.T, mnt string) {
	t.Cleanup(func() {
		for range 50 {
			if exec.Command("umount", mnt).Run() == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("umount %s failed; detached lazily", mnt)
		exec.Command("umount", "-l", mnt).Run()
	})
}

// twoSessions opens mnt twice, as two server sessions do, each Dir
// with its own FoldSet.
func twoSessions(t *testing.T, mnt string) (*Dir, *Dir) {
	t.Helper()
	var d [2]*Dir
	for i := range d {
		var err error
		if d[i], err = Open(mnt); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d[i].Close() })
	}
	return d[0], d[1]
}

// On a real exFAT (FUSE), A.txt then a.txt: the first stays whole, the
// second is refused (QA ad: the second replaced the first, both
// reported saved).
func TestExFATCaseTwinIsRefused(t *testing.T) {
	mnt := mountExFAT(t)
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

// Two server sessions, each with its own set (a send --sessions 2
// whose twins went one to each): the second session read the directory
// before the first named A.txt, and its a.txt is still refused at
// Create, not stored over A.txt (review 53 M3).
func TestExFATTwinOfAnotherSessionsFileIsRefused(t *testing.T) {
	mnt := mountExFAT(t)
	d1, d2 := twoSessions(t, mnt)
	if errs := receiveAll(t, d2, "z.txt"); len(errs) > 0 {
		t.Fatal(errs)
	}
	if !d2.folds().folds["."] {
		t.Fatal("exFAT not found to fold case")
	}
	if errs := receiveAll(t, d1, "A.txt"); len(errs) > 0 {
		t.Fatal(errs)
	}
	errs := receiveAll(t, d2, "a.txt")
	if e := fmt.Sprint(errs["a.txt"]); !strings.Contains(e, "there before") {
		t.Errorf("a.txt, A.txt named by another session: %v", errs)
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "A.txt")); err != nil || string(got) != "A.txt" {
		t.Errorf("A.txt holds %q (%v): replaced by its case twin", got, err)
	}
	// The set's lstat misses nothing the other way either: a name made
	// since, and the same name, replaces as anywhere.
	if errs := receiveAll(t, d2, "A.txt"); len(errs) > 0 {
		t.Errorf("A.txt again: %v", errs)
	}
}

// Two server sessions, each with its own set, receiving A.txt and a.txt
// at once: the second opens the first's partial (on exfat-fuse the
// first's lock does not keep it out: each name its own inode), and is
// refused, the first's bytes untouched, its partial not removed.
func TestExFATTwinOfAPartialUnderWayIsRefused(t *testing.T) {
	mnt := mountExFAT(t)
	d1, d2 := twoSessions(t, mnt)
	in1, err := d1.Create("A.txt")
	if err != nil {
		t.Fatal(err)
	}
	if in2, err := d2.Create("a.txt"); err == nil || !strings.Contains(err.Error(), "does not tell its partial from") {
		if err == nil {
			in2.WriteAt([]byte("lower"), 0)
			in2.Commit(time.Now(), 0o644)
		}
		t.Errorf("a.txt while A.txt is received by another session: %v", err)
	}
	if _, err := in1.WriteAt([]byte("upper"), 0); err != nil {
		t.Fatal(err)
	}
	if err := in1.Commit(time.Now(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "A.txt")); err != nil || string(got) != "upper" {
		t.Errorf("A.txt holds %q (%v)", got, err)
	}
}

// Names exFAT's upcase table takes for one, by the same key: σ, ς and
// Σ; ſ, s and S (review 53: strings.ToLower kept σ and ς apart).
func TestFoldKey(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"A.txt", "a.txt", true},
		{"σ.txt", "ς.txt", true},
		{"Σ.txt", "ς.txt", true},
		{"ſ.txt", "S.txt", true},
		{"É", "é", true},
		{"a.txt", "b.txt", false},
		{"ß", "ss", false},
	} {
		if got := foldKey(c.a) == foldKey(c.b); got != c.same {
			t.Errorf("foldKey(%q) == foldKey(%q): %v", c.a, c.b, got)
		}
		if got := strings.EqualFold(c.a, c.b); got != c.same {
			t.Errorf("EqualFold(%q, %q) = %v, which foldPending uses", c.a, c.b, got)
		}
	}
}

// Two sessions of one transfer (a get's Dirs share their FoldSet): the
// twin of a file the other session has under way, or in its batch not
// yet named, is refused at its Create, before anything is opened
// (review 53: on exfat-fuse, whose names have an inode each, the second
// session opened the first's partial and wrote its twin's bytes into
// it, and the first was stored holding them).
func TestFoldingTwinOfAnotherSessionIsRefusedAtCreate(t *testing.T) {
	root := t.TempDir()
	shared := &FoldSet{folds: map[string]bool{".": true}, entries: map[string]map[string]foldEntry{".": {}}}
	d1, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Close()
	d2, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	d1.Folds, d2.Folds = shared, shared
	d1.BeginBatch()
	in1, err := d1.Create("A.txt")
	if err != nil {
		t.Fatal(err)
	}
	in1.WriteAt([]byte("upper"), 0)
	if _, err := d2.Create("a.txt"); err == nil || !strings.Contains(err.Error(), "being received in this transfer") {
		t.Fatalf("a.txt while A.txt is received: %v", err)
	}
	if err := in1.Commit(time.Now(), 0o644); err != nil {
		t.Fatal(err)
	}
	// In d1's batch, not named yet: still held.
	if _, err := d2.Create("a.txt"); err == nil {
		t.Fatal("a.txt created while A.txt waits in a batch")
	}
	if err := d1.EndBatch(); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Create("a.txt"); err == nil || !strings.Contains(err.Error(), "received in this transfer") {
		t.Fatalf("a.txt after A.txt was named: %v", err)
	}
	// A file that ends without a name gives its form back.
	in3, err := d2.Create("B.txt")
	if err != nil {
		t.Fatal(err)
	}
	in3.Abort(false)
	in4, err := d1.Create("b.txt")
	if err != nil {
		t.Fatalf("b.txt after B.txt was given up: %v", err)
	}
	in4.Abort(false)
	if got, _ := os.ReadFile(filepath.Join(root, "A.txt")); string(got) != "upper" {
		t.Errorf("A.txt: %q", got)
	}
}
