package filestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
)

// A partial another session is receiving cannot be removed by any
// spelling of its name (review: ".x.bin.kerf-part/." went past the lock
// check once names through a partial's name could be removed).
func TestRemoveLivePartialAnySpelling(t *testing.T) {
	root := t.TempDir()
	recv, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	other, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	in, err := recv.Create("x.bin")
	if err != nil {
		t.Fatal(err)
	}
	in.WriteAt([]byte("being received"), 0)
	tmp := filestore.TempName("x.bin")
	for _, name := range []string{tmp, tmp + "/.", "./" + tmp + "/.", "/" + tmp} {
		err := other.Remove(name)
		if _, serr := os.Lstat(filepath.Join(root, tmp)); serr != nil {
			t.Fatalf("Remove(%q) = %v, and the live partial is gone", name, err)
		}
		// "/." names a directory: refused as not a file, as for any
		// file so spelt; otherwise the partial's lock refuses.
		if strings.HasSuffix(name, "/.") {
			if err == nil || !strings.Contains(err.Error(), "not a file") {
				t.Errorf("Remove(%q) = %v, want it refused as not a file", name, err)
			}
		} else if !errors.Is(err, filestore.ErrBusy) {
			t.Errorf("Remove(%q) = %v, want ErrBusy", name, err)
		}
	}
	if err := in.Commit(time.Time{}, 0o644); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// A link planted under a partial's name (which a receive will not write
// through, and asks to have removed) is removed by Remove, the link and
// not what it leads to, outside the tree or in it (QA: refused as
// leading outside).
func TestRemovePlantedPartialLink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "secret")
	os.WriteFile(target, []byte("keep"), 0o644)
	os.WriteFile(filepath.Join(root, "inside"), []byte("keep"), 0o644)
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, to := range []string{target, "inside", "nowhere"} {
		link := filepath.Join(root, filestore.TempName("x.bin"))
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
		if err := d.Remove(filestore.TempName("x.bin")); err != nil {
			t.Errorf("Remove of a link to %s under a partial's name: %v", to, err)
		}
		if _, err := os.Lstat(link); err == nil {
			t.Errorf("the link to %s is still there", to)
			os.Remove(link)
		}
	}
	for _, p := range []string{target, filepath.Join(root, "inside")} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "keep" {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
}
