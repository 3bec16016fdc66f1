package filestore_test

import (
	"os"
	"path/filepath"
	"testing"

	"kerf/filestore"
)

// A directory named as kerf's partials, which nothing stores or serves
// (CleanName refuses names through it) but a kerf from before stored
// when sent one, can still be emptied and removed by its owner (REMOTE
// DELETE, RMDIR; review).
func TestPartNamedDirCanBeRemoved(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "d/.x.kerf-part"), 0o755)
	os.WriteFile(filepath.Join(root, "d/.x.kerf-part/inner"), []byte("old"), 0o644)
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Remove("d/.x.kerf-part/inner"); err != nil {
		t.Errorf("remove the file under it: %v", err)
	}
	if err := d.Rmdir("d/.x.kerf-part"); err != nil {
		t.Errorf("rmdir it: %v", err)
	}
}
