package filestore_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/internal/testproc"
)

// receiveWhole writes data to name through d as a transfer does (its partial
// resumed where it matches, else truncated) and commits it.
func receiveWhole(t *testing.T, d *filestore.Dir, name string, data []byte) error {
	t.Helper()
	in, err := d.Create(name)
	if err != nil {
		return err
	}
	if n, _, err := in.Partial(); err != nil || n > 0 {
		// Whatever the partial holds, this test writes all of it.
		if err := in.Truncate(0); err != nil {
			return err
		}
	}
	if _, err := in.WriteAt(data, 0); err != nil {
		return err
	}
	return in.Commit(time.Time{}, 0o644)
}

// A partial's name that is a hard link to another file is not written
// through: the other file keeps its bytes. (QA: `ln precious
// .victim.kerf-part`, then `send --resume victim` overwrote precious.)
func TestPartialHardLinkNotWrittenThrough(t *testing.T) {
	root := t.TempDir()
	data := bytes.Repeat([]byte("victim's new bytes "), 500)
	precious := []byte("precious: must stay as it is")
	writeFile(t, filepath.Join(root, "precious"), precious)
	if err := os.Link(filepath.Join(root, "precious"), filepath.Join(root, filestore.TempName("victim"))); err != nil {
		t.Fatal(err)
	}
	d := openTree(t, root)
	if err := receiveWhole(t, d, "victim", data); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "precious")); !bytes.Equal(got, precious) {
		t.Errorf("precious was written through its link: %q", got[:min(len(got), 40)])
	}
	if got, _ := os.ReadFile(filepath.Join(root, "victim")); !bytes.Equal(got, data) {
		t.Errorf("victim holds %d bytes, want the %d received", len(got), len(data))
	}
}

// A partial another user made is not written into (its owner could read
// what is received, and keep the final file): its name is removed and a
// partial made afresh; where that is not allowed (a sticky directory),
// the file is refused before any byte is written. (QA: a planted empty
// .secret2.kerf-part of nobody's, mode 666, became the final file, owned
// by nobody.)
func TestOthersPartialNotWrittenInto(t *testing.T) {
	if dir := os.Getenv("KERF_TEST_PLANTED_PARTIAL"); dir != "" {
		// As nobody, in a sticky directory holding daemon's partial.
		d, err := filestore.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		err = receiveWhole(t, d, "secret", []byte("secret bytes"))
		if err == nil || !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("receiving over another user's partial in a sticky directory: %v, want a permission error", err)
		}
		if fi, _ := os.Stat(filepath.Join(dir, filestore.TempName("secret"))); fi == nil || fi.Size() != 0 {
			t.Fatalf("the other user's partial was written: %v", fi)
		}
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file of another user's")
	}
	root := t.TempDir()
	part := filepath.Join(root, filestore.TempName("secret2"))
	writeFile(t, part, nil)
	os.Chmod(part, 0o666)
	if err := os.Chown(part, testproc.Nobody, testproc.Nobody); err != nil {
		t.Fatal(err)
	}
	d := openTree(t, root)
	if err := receiveWhole(t, d, "secret2", []byte("secret bytes")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "secret2"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 {
		t.Errorf("the final file is owned by uid %d, the planted partial's owner", st.Uid)
	}

	// Unprivileged, in a sticky directory: refused, nothing written.
	sticky := testproc.WorldDir(t, "kerf-planted-")
	if err := os.Chmod(sticky, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(sticky, filestore.TempName("secret"))
	writeFile(t, planted, nil)
	os.Chmod(planted, 0o666)
	if err := os.Chown(planted, 1, 1); err != nil { // daemon
		t.Fatal(err)
	}
	testproc.RerunAs(t, sticky, testproc.Nobody, "TestOthersPartialNotWrittenInto", "KERF_TEST_PLANTED_PARTIAL="+sticky)
}

// A partial owned as its directory is (a server running as root on NFS
// with root_squash makes both nobody's) is this side's own: resumed
// from, not made afresh (review).
func TestPartialOwnedAsItsDirectoryIsResumed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of another user's")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "squashed")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(dir, filestore.TempName("big.bin"))
	writeFile(t, part, bytes.Repeat([]byte("x"), 5000))
	for _, p := range []string{dir, part} {
		if err := os.Chown(p, testproc.Nobody, testproc.Nobody); err != nil {
			t.Fatal(err)
		}
	}
	d := openTree(t, root)
	in, err := d.Create("squashed/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Abort(true)
	if n, _, err := in.Partial(); err != nil || n != 5000 {
		t.Errorf("Partial = %d, %v; want the 5000 bytes kept", n, err)
	}
}
