package filestore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Batches together hold at most the process's budget of descriptors:
// past it, a batch is flushed at once rather than at maxBatch files, and
// every file still arrives under its name (QA: many sessions at once ran
// a server out of descriptors).
func TestBatchesKeepToTheDescriptorBudget(t *testing.T) {
	saved := batchBudget
	batchBudget = func() int64 { return 8 }
	defer func() { batchBudget = saved }()
	root := t.TempDir()
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	base := openFDs(t)
	d.BeginBatch()
	most := 0
	for i := range 100 {
		in, err := d.Create(fmt.Sprintf("f%03d", i))
		if err != nil {
			t.Fatal(err)
		}
		in.WriteAt([]byte("x"), 0)
		if err := in.Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
		most = max(most, openFDs(t)-base)
	}
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	// The budget, the top directory's handle, and the reading of
	// /proc/self/fd itself.
	if most > 8+2 {
		t.Errorf("the batch held up to %d descriptors, budget 8", most)
	}
	for i := range 100 {
		if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("f%03d", i))); err != nil {
			t.Error(err)
		}
	}
	if n := batchedFiles.Load(); n != 0 {
		t.Errorf("%d files counted as held after the batch ended", n)
	}
}
