package filestore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kerf/filestore"
)

// A file that cannot be made in a directory closed to writing is said to
// be refused under its own name, not kerf's temporary one for it (QA:
// ".big.bin.kerf-part: permission denied").
func TestRefusedCreateNamesTheFile(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	unprivileged(t, func() {
		_, err = d.Create("ro/big.bin")
	})
	if err == nil {
		t.Fatal("created a file in a directory closed to writing")
	}
	if msg := err.Error(); !strings.Contains(msg, "ro/big.bin") || strings.Contains(msg, filestore.PartSuffix) || !strings.Contains(msg, "permission denied") {
		t.Errorf("error %q; want it to name ro/big.bin, permission denied, and no partial", msg)
	}
}
