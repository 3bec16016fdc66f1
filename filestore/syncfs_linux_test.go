package filestore

import (
	"fmt"
	"testing"
	"time"
)

// A batch's files, in two directories of one file system, are synced
// with syncfs (one call for the file system).
func TestSyncFilesystems(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.BeginBatch()
	for i := range syncfsMin {
		in, err := d.Create(fmt.Sprintf("d%d/f%d", i%2, i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.WriteAt([]byte("data"), 0); err != nil {
			t.Fatal(err)
		}
		if err := in.Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.pending) != syncfsMin {
		t.Fatalf("%d files pending, want %d", len(d.pending), syncfsMin)
	}
	if err := d.syncFilesystems(d.pending); err != nil {
		t.Fatalf("syncfs: %v", err)
	}
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
}
