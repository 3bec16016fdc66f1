package kermit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"kerf/kermit"
)

// A send of a FileList takes its files as its sessions go, and keeps
// nothing of a file once the receiver said it saved it (a long group is
// saved in parts): its memory follows the files under way, not the
// files sent. Each file's Open holds a watched object; by the time the
// list hands out its last file, most of those before it must have been
// collected. One session (with its confirming pass) and three.
func TestSendListForgetsSavedFiles(t *testing.T) {
	defer kermit.SetSavedEvery(8)()
	for _, sessions := range []int{1, 3} {
		t.Run(fmt.Sprint(sessions, " sessions"), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			const n = 400
			for j := range n {
				os.WriteFile(filepath.Join(src, fmt.Sprint(j)), randomBytes(100+j, int64(j)), 0o644)
			}
			var freed atomic.Int64
			var freedAtLast int64 = -1
			list := kermit.FileList{
				All: func(yield func(kermit.OutgoingFile) bool) {
					for j := range n {
						if j == n-1 {
							// What is still held now is under way.
							for range 3 {
								runtime.GC()
								time.Sleep(10 * time.Millisecond)
							}
							freedAtLast = freed.Load()
						}
						p := filepath.Join(src, fmt.Sprint(j))
						fi, err := os.Stat(p)
						if err != nil {
							t.Error(err)
							return
						}
						watched := new([256]byte)
						runtime.SetFinalizer(watched, func(*[256]byte) { freed.Add(1) })
						f := kermit.OutgoingFile{Name: fmt.Sprintf("d%d/f%03d", j%4, j), Size: fi.Size(), ModTime: fi.ModTime(),
							Open: func() (kermit.FileReader, error) { _ = watched[0]; return os.Open(p) }}
						if !yield(f) {
							return
						}
					}
				},
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			senders, wait := sendClientsWith(t, ctx, dst, sessions, nil, nil, func(scfg, rcfg *kermit.Config) {
				scfg.Reliable, rcfg.Reliable = true, true // the receiver says what it saved
			})
			if err := kermit.SendParallelList(ctx, senders, list); err != nil {
				t.Fatal(err)
			}
			cancel() // ends the receivers
			wait()
			for j := range n {
				want, _ := os.ReadFile(filepath.Join(src, fmt.Sprint(j)))
				got, err := os.ReadFile(filepath.Join(dst, fmt.Sprintf("d%d/f%03d", j%4, j)))
				if err != nil || string(got) != string(want) {
					t.Fatalf("file %d: %d bytes, %v", j, len(got), err)
				}
			}
			// Under way at most: a part per session and what its window
			// holds beyond it.
			t.Logf("held %d", int64(n-1)-freedAtLast)
			if held := int64(n-1) - freedAtLast; held > 120 {
				t.Errorf("%d of the %d files handed out still held when the last was taken", held, n-1)
			}
		})
	}
}

// A directory the list's walk finds that its Dirs did not give (made
// since it was listed) is sent in the last group of several sessions,
// made and given its mode there, not lost.
func TestSendListDirNotListed(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	files := numberedFiles(src, "top/f%02d", 12, 100)
	when := time.Date(2022, 5, 6, 7, 8, 9, 0, time.UTC)
	top := kermit.OutgoingFile{Name: "top", Dir: true, Filled: true, Mode: 0o755, ModeKnown: true}
	late := kermit.OutgoingFile{Name: "top/new", Dir: true, Mode: 0o750, ModeKnown: true, ModTime: when}
	all := append([]kermit.OutgoingFile{top}, files...)
	all = append(all, late)
	list := kermit.FileList{All: slices.Values(all), Dirs: slices.Values([]kermit.OutgoingFile{top})}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	senders, wait := sendClients(t, ctx, dst, 2, nil, nil)
	if err := kermit.SendParallelList(ctx, senders, list); err != nil {
		t.Fatal(err)
	}
	cancel()
	wait()
	fi, err := os.Stat(filepath.Join(dst, "top/new"))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 || !fi.ModTime().Equal(when) {
		t.Errorf("top/new: %v, %v; want a directory, mode 0750, its time", fi, err)
	}
}
