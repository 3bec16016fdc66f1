package filestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
)

// Two sessions receiving one name: the second is refused while the first
// holds the temporary file, so the received file is never a mix of two.
func TestCreateSameNameTwice(t *testing.T) {
	root := t.TempDir()
	d1, _ := filestore.Open(root)
	defer d1.Close()
	d2, _ := filestore.Open(root)
	defer d2.Close()

	a, err := d1.Create("x.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Create("x.bin"); !errors.Is(err, filestore.ErrBusy) {
		t.Fatalf("second Create of a name being received: %v, want ErrBusy", err)
	}
	a.WriteAt([]byte("first"), 0)
	if err := a.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := d2.Create("x.bin")
	if err != nil {
		t.Fatalf("Create after the first committed: %v", err)
	}
	if size, _, _ := b.Partial(); size != 0 {
		t.Errorf("the new temporary file holds %d bytes of the committed one", size)
	}
	b.WriteAt([]byte("second!"), 0)
	// A third session cannot remove the second's file by aborting.
	if _, err := d1.Create("x.bin"); !errors.Is(err, filestore.ErrBusy) {
		t.Fatalf("Create while the second receives: %v", err)
	}
	if err := b.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(root, "x.bin"))
	if string(got) != "second!" {
		t.Errorf("x.bin = %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, ".x.bin.kerf-part")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file left: %v", err)
	}
}

// An aborted, kept partial can be taken over by the next session.
func TestCreateAfterAbortKeep(t *testing.T) {
	root := t.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	a, _ := d.Create("y")
	a.WriteAt([]byte("part"), 0)
	if err := a.Abort(true); err != nil {
		t.Fatal(err)
	}
	b, err := d.Create("y")
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := b.Partial(); size != 4 {
		t.Errorf("kept partial has %d bytes, want 4", size)
	}
	b.Abort(false)
	if _, err := os.Stat(filepath.Join(root, ".y.kerf-part")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Abort(false) left the partial: %v", err)
	}
}

// A name held by a session that ends a moment later (a killed client's,
// whose end the server sees late) is taken once it is free, rather than
// refused at once: the rerun of a killed send resumes it.
func TestCreateWaitsForASessionEnding(t *testing.T) {
	root := t.TempDir()
	d1, _ := filestore.Open(root)
	defer d1.Close()
	d2, _ := filestore.Open(root)
	defer d2.Close()
	a, err := d1.Create("z.bin")
	if err != nil {
		t.Fatal(err)
	}
	a.WriteAt([]byte("kept part"), 0)
	go func() {
		time.Sleep(200 * time.Millisecond)
		a.Abort(true)
	}()
	b, err := d2.Create("z.bin")
	if err != nil {
		t.Fatalf("Create of a name whose holder ends: %v", err)
	}
	defer b.Abort(false)
	if size, _, _ := b.Partial(); size != int64(len("kept part")) {
		t.Errorf("the partial the first session kept has %d bytes here", size)
	}
}
