package filestore_test

import (
	"errors"
	"os"
	"path/filepath"
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
		if !errors.Is(err, filestore.ErrBusy) {
			t.Errorf("Remove(%q) = %v, want ErrBusy", name, err)
		}
	}
	if err := in.Commit(time.Time{}, 0o644); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}
