package kermit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"kerf/framing"
	"kerf/kermit"
)

// A resumed several-session GET (kerf get -r --resume --sessions N: the
// files here whole go to the server as its kerf-skip list) whose session
// is lost: the lost GET's end reports every file of its skip list the
// server left out (reportSkipped); those are not files of the share's
// stream, and do not count for the take-over's pass-over by place, or
// the files right after the cut would be fetched and never told (a
// review's test; it failed before errListedWhole).
func TestGetTakeOverWithSkipList(t *testing.T) {
	root, dst := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "tree"), 0o755)
	os.MkdirAll(filepath.Join(dst, "tree"), 0o755)
	var names []string
	have := map[string]bool{}
	for j := range 60 {
		name := fmt.Sprintf("tree/f%02d", j)
		data := randomBytes(100000+j, int64(j))
		os.WriteFile(filepath.Join(root, name), data, 0o644)
		if j >= 40 {
			// Here whole already.
			os.WriteFile(filepath.Join(dst, name), data, 0o644)
			st, _ := os.Stat(filepath.Join(root, name))
			os.Chtimes(filepath.Join(dst, name), st.ModTime(), st.ModTime())
			have[name] = true
		} else {
			names = append(names, name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ended endLog
	var told doneSaved
	clients, stores, cuts := getClients(t, ctx, root, dst, func(e kermit.Event) { ended.note(e); told.note(e) }, 0, 3)
	list, err := clients[0].GetListing(ctx, "tree", true)
	if err != nil || len(list) != 60 {
		t.Fatalf("GetListing: %d, %v", len(list), err)
	}
	var skip []framing.ListingEntry
	for _, e := range list {
		if have[e.Name] {
			skip = append(skip, e)
		}
	}
	err = kermit.GetParallel(ctx, clients, "tree", kermit.GetOptions{Recursive: true, Resume: true, Skip: skip}, stores)
	if cuts[1].n.Load() >= 0 {
		t.Fatal("session 1's link was not cut: the test tested nothing")
	}
	if err != nil {
		t.Errorf("GetParallel: %v", err)
	}
	ended.fetchedOnce(t, root, dst, names)
	told.onceEach(t, names)
	ended.mu.Lock()
	defer ended.mu.Unlock()
	for name := range have {
		if k := ended.ended[name]; len(k) != 1 || k[0] != kermit.FileSkipped {
			t.Errorf("%s (skip list) ended %v, want skipped once", name, k)
		}
	}
}

// The same, with a file right after the cut that cannot be stored (a
// directory of its name here): it is told failed and named in the GET's
// error (it was neither, and the GET succeeded, before errListedWhole).
func TestGetTakeOverWithSkipListTellsFailure(t *testing.T) {
	root, dst := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "tree"), 0o755)
	os.MkdirAll(filepath.Join(dst, "tree/f09/x"), 0o755) // f09 cannot be stored
	have := map[string]bool{}
	for j := range 60 {
		name := fmt.Sprintf("tree/f%02d", j)
		data := randomBytes(100000+j, int64(j))
		os.WriteFile(filepath.Join(root, name), data, 0o644)
		if j >= 40 {
			os.WriteFile(filepath.Join(dst, name), data, 0o644)
			st, _ := os.Stat(filepath.Join(root, name))
			os.Chtimes(filepath.Join(dst, name), st.ModTime(), st.ModTime())
			have[name] = true
		}
	}
	if !kermit.InShare("tree/f09", 1, 2) {
		t.Skip("f09 not in share 1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ended endLog
	clients, stores, cuts := getClients(t, ctx, root, dst, ended.note, 0, 3)
	list, err := clients[0].GetListing(ctx, "tree", true)
	if err != nil {
		t.Fatal(err)
	}
	var skip []framing.ListingEntry
	for _, e := range list {
		if have[e.Name] {
			skip = append(skip, e)
		}
	}
	err = kermit.GetParallel(ctx, clients, "tree", kermit.GetOptions{Recursive: true, Resume: true, Skip: skip}, stores)
	if cuts[1].n.Load() >= 0 {
		t.Fatal("session 1's link was not cut: the test tested nothing")
	}
	ended.mu.Lock()
	k := ended.ended["tree/f09"]
	ended.mu.Unlock()
	if len(k) != 1 || k[0] != kermit.FileFailed {
		t.Errorf("tree/f09 (not stored) ended %v, want failed once", k)
	}
	if err == nil {
		t.Errorf("GetParallel succeeded with tree/f09 not fetched")
	}
}

// A GET neither recursive nor resumed ('R') is taken over resumed, and a
// kerf server's REGET ('J') recurses: the take-over's stream is not the
// lost pass's (a subdirectory's files come in it), so the tracker of a
// GET that is not recursive keeps what it told of every file rather
// than pass over by place (a review's test), and the take-over leaves
// directories out (an older oddity: it fetched their files).
func TestGetTakeOverNotRecursive(t *testing.T) {
	root, dst := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "tree/a"), 0o755)
	var names []string
	for j := range 60 {
		name := fmt.Sprintf("tree/f%02d", j)
		os.WriteFile(filepath.Join(root, name), randomBytes(100000+j, int64(j)), 0o644)
		names = append(names, filepath.Base(name))
	}
	for j := range 20 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("tree/a/s%02d", j)), randomBytes(1000+j, int64(j)), 0o644)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ended endLog
	var told doneSaved
	clients, stores, cuts := getClients(t, ctx, root, dst, func(e kermit.Event) { ended.note(e); told.note(e) }, 0, 3)
	err := kermit.GetParallel(ctx, clients, "tree/*", kermit.GetOptions{}, stores)
	if cuts[1].n.Load() >= 0 {
		t.Fatal("session 1's link was not cut: the test tested nothing")
	}
	if err != nil {
		t.Errorf("GetParallel: %v", err)
	}
	told.onceEach(t, names)
	ended.mu.Lock()
	defer ended.mu.Unlock()
	for _, n := range names {
		want, _ := os.ReadFile(filepath.Join(root, "tree", n))
		if b, err := os.ReadFile(filepath.Join(dst, n)); err != nil || string(b) != string(want) {
			t.Errorf("%s: %d bytes, %v; want %d", n, len(b), err, len(want))
		}
		if k := ended.ended[n]; len(k) != 1 || k[0] != kermit.FileDone {
			t.Errorf("%s ended %v, want done once", n, k)
		}
	}
	for n := range ended.ended {
		if !slices.Contains(names, n) {
			t.Logf("also told: %s %v", n, ended.ended[n])
		}
	}
	for j := range 20 {
		name := fmt.Sprintf("a/s%02d", j)
		if _, err := os.Stat(filepath.Join(dst, name)); err == nil {
			t.Errorf("%s fetched by a GET that is not recursive (told %v)", name, ended.ended[name])
		}
	}
}
