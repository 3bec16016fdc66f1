package kermit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// A file that failed on its own in a GET session lost afterwards (here
// its rename at the client failed once) is fetched again by the
// take-over, which gets the lost session's whole share: whole this time,
// it is told done (Again) and the GET succeeds. Before, the take-over's
// success was passed over as already told, and the GET failed naming a
// file that was there (QA, nineteenth session).
func TestGetTakeOverRetriesOwnFailure(t *testing.T) {
	root, dst := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "tree"), 0o755)
	for j := range 30 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("tree/f%02d", j)), randomBytes(150000+j, int64(j)), 0o644)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ended endLog
	var again sync.Map // names told done Again
	note := func(e kermit.Event) {
		ended.note(e)
		if e.Again {
			again.Store(e.Name, true)
		}
	}
	clients, stores, cuts := getClients(t, ctx, root, dst, note, 0, 6)
	// Session 1's first file fails at its commit, once.
	var once sync.Once
	var failed string
	stores[1] = wrapStore{stores[1].(*filestore.Dir), func(in kermit.Incoming) kermit.Incoming {
		var f kermit.Incoming = in
		once.Do(func() {
			failed = in.Name()
			f = failingFile{Incoming: in, failAt: -1, commitErr: true}
		})
		return f
	}}
	err := kermit.GetParallel(ctx, clients, "tree", kermit.GetOptions{Recursive: true}, stores)
	if cuts[1].n.Load() >= 0 {
		t.Fatal("session 1's link was not cut: the test tested nothing")
	}
	if err != nil {
		t.Errorf("GetParallel: %v; want success (the failed file came whole in the take-over)", err)
	}
	ended.mu.Lock()
	defer ended.mu.Unlock()
	if got := ended.ended[failed]; !slices.Equal(got, []kermit.EventKind{kermit.FileFailed, kermit.FileDone}) {
		t.Errorf("%s ended %v; want failed, then done", failed, got)
	}
	if _, ok := again.Load(failed); !ok {
		t.Errorf("%s not told done Again", failed)
	}
	for j := range 30 {
		n := fmt.Sprintf("tree/f%02d", j)
		want, _ := os.ReadFile(filepath.Join(root, n))
		got, err := os.ReadFile(filepath.Join(dst, n))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: %d bytes, %v", n, len(got), err)
		}
	}
}
