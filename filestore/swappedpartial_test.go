package filestore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
)

// Something other than kerf (a cleanup job, a user) removes a file's
// partial while it is received, and another file takes its name: the
// commit must not rename that other file to the final name as the file
// received, nor set its times, and an abort must not remove it. (It
// did: the rename and the times went by name, and a sender was told
// its file was stored while the final name held the other's bytes.)
func TestPartialSwappedWhileReceived(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch bool
		swap  func(t *testing.T, part string) // what happens to the partial
	}{
		{"replaced", false, func(t *testing.T, part string) {
			os.Remove(part)
			os.WriteFile(part, []byte("someone else's"), 0o600)
		}},
		{"replaced, batch", true, func(t *testing.T, part string) {
			os.Remove(part)
			os.WriteFile(part, []byte("someone else's"), 0o600)
		}},
		{"removed", false, func(t *testing.T, part string) { os.Remove(part) }},
		{"removed, batch", true, func(t *testing.T, part string) { os.Remove(part) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d, err := filestore.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if tc.batch {
				d.BeginBatch()
			}
			in, err := d.Create("f.bin")
			if err != nil {
				t.Fatal(err)
			}
			want := bytes.Repeat([]byte("received "), 1000)
			if _, err := in.WriteAt(want, 0); err != nil {
				t.Fatal(err)
			}
			part := filepath.Join(dir, filestore.TempName("f.bin"))
			tc.swap(t, part)
			other, _ := os.ReadFile(part) // nil if removed
			err = in.Commit(time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC), 0o644)
			if tc.batch && err == nil {
				err = d.EndBatch()
			}
			if err == nil || !strings.Contains(err.Error(), "removed or replaced") {
				t.Fatalf("commit: %v; want the partial's swap named", err)
			}
			if _, serr := os.Stat(filepath.Join(dir, "f.bin")); !os.IsNotExist(serr) {
				got, _ := os.ReadFile(filepath.Join(dir, "f.bin"))
				t.Fatalf("final name holds %q (stat %v); want nothing", got, serr)
			}
			if other != nil {
				got, err := os.ReadFile(part)
				if err != nil || !bytes.Equal(got, other) {
					t.Fatalf("the other file at the partial's name: %q, %v; want it untouched", got, err)
				}
				if fi, _ := os.Stat(part); fi.ModTime().Year() == 2001 {
					t.Fatal("the other file got the received file's time")
				}
			}
		})
	}
}

// A file aborted after its partial was replaced by something else
// leaves that other file where it is.
func TestAbortLeavesAnotherFileAtThePartialsName(t *testing.T) {
	dir := t.TempDir()
	d, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in, err := d.Create("f.bin")
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(dir, filestore.TempName("f.bin"))
	os.Remove(part)
	os.WriteFile(part, []byte("someone else's"), 0o600)
	if err := in.Abort(false); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(part); err != nil || string(got) != "someone else's" {
		t.Fatalf("after the abort: %q, %v; want the other file kept", got, err)
	}
}
