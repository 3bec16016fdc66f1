package kermit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"kerf/kermit"
)

// What the lost session of a GET told for good (a FIFO on the server
// passed over) is not told again when another session takes its share
// over and the server passes the FIFOs over once more. (Found by a
// review: each was named twice.)
func TestGetTakeOverTellsEachEndOnce(t *testing.T) {
	root, dst := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "tree"), 0o755)
	for j := range 6 {
		if err := syscall.Mkfifo(filepath.Join(root, fmt.Sprintf("tree/a%d", j)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for j := range 60 {
		name := fmt.Sprintf("tree/f%02d", j)
		os.WriteFile(filepath.Join(root, name), randomBytes(150000+j, int64(j)), 0o644)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	ended := map[string][]string{}
	note := func(e kermit.Event) {
		if e.Kind == kermit.FileDone || e.Kind == kermit.FileFailed || e.Kind == kermit.FileSkipped {
			mu.Lock()
			ended[e.Name] = append(ended[e.Name], fmt.Sprintf("%v:%v", e.Kind, e.Err))
			mu.Unlock()
		}
	}
	clients, stores, cuts := getClients(t, ctx, root, dst, note, 0, 3)
	cut := cuts[1]
	err := kermit.GetParallel(ctx, clients, "tree", kermit.GetOptions{Recursive: true}, stores)
	if cut.n.Load() >= 0 {
		t.Fatal("session 1's link was not cut: the test tested nothing")
	}
	if err != nil {
		t.Errorf("GetParallel: %v", err)
	}
	for name, k := range ended {
		if len(k) != 1 {
			t.Errorf("%s ended %d times: %v", name, len(k), k)
		}
	}
}
