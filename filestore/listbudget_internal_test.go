//go:build linux

package filestore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The directory listings of one Dir hold at most listBudget names
// however many directories a batch receives into, a directory of more
// than listMax entries is not listed (its files take the temporary
// name), and both start again with the next batch (review: 64 listings
// of 4,000 names took 67 MB).
func TestListingsBounded(t *testing.T) {
	root := t.TempDir()
	const dirs, per = 20, 4000 // 80,000 names: over the budget
	for i := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i))
		os.Mkdir(dir, 0o755)
		for j := range per {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("existing-%d", j)))
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	os.Mkdir(filepath.Join(root, "big"), 0o755)
	for j := range listMax + 1 {
		f, _ := os.Create(filepath.Join(root, "big", fmt.Sprintf("e%d", j)))
		f.Close()
	}
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.UnnamedMax = NetUnnamedMax
	unnamed := 0
	receive := func(name string) {
		in, err := d.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if in.(*incoming).unnamed {
			unnamed++
		}
		in.(*incoming).WillHold(1, false)
		in.WriteAt([]byte("x"), 0)
		if err := in.Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d.BeginBatch()
	for i := range dirs {
		receive(fmt.Sprintf("d%02d/new", i))
		if n := d.listedNames.Load(); n > listBudget {
			t.Fatalf("after d%02d the listings hold %d names, over %d", i, n, listBudget)
		}
	}
	if unnamed == 0 || unnamed == dirs {
		t.Errorf("%d of %d files unnamed: want the first directories listed and the rest, past the budget, not", unnamed, dirs)
	}
	unnamed = 0
	receive("big/new")
	if unnamed != 0 {
		t.Error("a file in a directory of more than listMax entries was received unnamed")
	}
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	d.BeginBatch()
	if n := d.listedNames.Load(); n != 0 {
		t.Errorf("a new batch starts with %d names listed", n)
	}
	unnamed = 0
	receive("d19/newer")
	if unnamed != 1 {
		t.Error("the next batch does not list again")
	}
	d.EndBatch()
}
