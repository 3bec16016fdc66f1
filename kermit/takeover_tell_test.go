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
// passed over, a file saved) is not told again when another session
// takes its share over and the server passes the FIFOs over and finds
// the files whole once more. (Found by a review: each FIFO was named
// twice.) The tracker keeps nothing of a saved or passed-over file: the
// take-over knows them by their place in the share's order, so the
// rows with parts saved before the cut (savedEvery 2) try that.
func TestGetTakeOverTellsEachEndOnce(t *testing.T) {
	for _, tc := range []struct {
		savedEvery, cutAt int
	}{{0, 3}, {2, 3}, {2, 9}, {3, 14}} {
		t.Run(fmt.Sprintf("saved every %d, cut at %d", tc.savedEvery, tc.cutAt), func(t *testing.T) {
			if tc.savedEvery > 0 {
				defer kermit.SetSavedEvery(tc.savedEvery)()
			}
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
			saved := map[string]int{}
			note := func(e kermit.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch e.Kind {
				case kermit.FileDone, kermit.FileFailed, kermit.FileSkipped:
					ended[e.Name] = append(ended[e.Name], fmt.Sprintf("%v:%v", e.Kind, e.Err))
				case kermit.FileSaved:
					saved[e.Name]++
				}
			}
			clients, stores, cuts := getClients(t, ctx, root, dst, note, 0, tc.cutAt)
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
			for j := range 60 {
				name := fmt.Sprintf("tree/f%02d", j)
				want, _ := os.ReadFile(filepath.Join(root, name))
				got, err := os.ReadFile(filepath.Join(dst, name))
				if err != nil || string(got) != string(want) {
					t.Errorf("%s: %d bytes, %v", name, len(got), err)
				}
				if len(ended[name]) == 0 {
					t.Errorf("%s never told", name)
				}
				if saved[name] != 1 {
					t.Errorf("%s told saved %d times", name, saved[name])
				}
			}
			if len(ended) != 66 {
				t.Errorf("%d names told, want 66 (60 files, 6 FIFOs)", len(ended))
			}
		})
	}
}
