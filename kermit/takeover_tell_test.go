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

	"kerf/filestore"
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
		had               int // files the client has whole already (a resume's skip list)
	}{{0, 3, 0}, {2, 3, 0}, {2, 9, 0}, {3, 14, 0}, {2, 5, 25}} {
		t.Run(fmt.Sprintf("saved every %d, cut at %d, had %d", tc.savedEvery, tc.cutAt, tc.had), func(t *testing.T) {
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
			for j := range tc.had {
				name := fmt.Sprintf("tree/f%02d", j)
				data, _ := os.ReadFile(filepath.Join(root, name))
				fi, _ := os.Stat(filepath.Join(root, name))
				os.MkdirAll(filepath.Join(dst, "tree"), 0o755)
				os.WriteFile(filepath.Join(dst, name), data, fi.Mode())
				os.Chtimes(filepath.Join(dst, name), fi.ModTime(), fi.ModTime())
			}
			clients, stores, cuts := getClients(t, ctx, root, dst, note, 0, tc.cutAt)
			cut := cuts[1]
			o := kermit.GetOptions{Recursive: true}
			if tc.had > 0 {
				// As get --resume: the files whole here go in the skip
				// list, told skipped by the client at each GET's end.
				list, err := clients[0].GetListing(ctx, "tree", true)
				if err != nil {
					t.Fatal(err)
				}
				o.Resume = true
				for _, e := range list {
					if stores[0].(*filestore.Dir).HasWhole(e) {
						o.Skip = append(o.Skip, e)
					}
				}
				if len(o.Skip) != tc.had {
					t.Fatalf("skip list of %d, want %d", len(o.Skip), tc.had)
				}
			}
			err := kermit.GetParallel(ctx, clients, "tree", o, stores)
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
				if want := btoi(j >= tc.had); saved[name] != want {
					t.Errorf("%s told saved %d times, want %d", name, saved[name], want)
				}
			}
			if len(ended) != 66 {
				t.Errorf("%d names told, want 66 (60 files, 6 FIFOs)", len(ended))
			}
		})
	}
}
