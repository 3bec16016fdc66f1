package filestore

import (
	"slices"
	"testing"
	"time"
)

// A file saved in directories its receive made has them durable too:
// the flush syncs the directories they were made in (the file's own is
// synced as the one renamed into), each once (QA: only the file's own
// directory was synced, so a crash could lose the new parents and the
// file with them after the sender was told it was saved).
func TestFlushSyncsTheDirectoriesMadeIn(t *testing.T) {
	var synced []string
	dirSynced = func(rel string) { synced = append(synced, rel) }
	defer func() { dirSynced = func(string) {} }()
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.BeginBatch()
	for _, name := range []string{"new/nest/n1/a", "new/nest/n1/b", "new/other/c"} {
		in, err := d.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		in.WriteAt([]byte(name), 0)
		if err := in.Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(synced)
	// n1 and other hold the files, synced as such; these hold the
	// directories made.
	if want := []string{".", "new", "new/nest"}; !slices.Equal(synced, want) {
		t.Errorf("synced %q, want %q", synced, want)
	}
}
