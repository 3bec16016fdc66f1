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
// is lost, with a file right after the cut that cannot be stored (a
// directory of its name here): it is told failed and named in the GET's
// error. The lost GET's end tells every file of its skip list the
// server left out (reportSkipped); those are not files of the share's
// stream, and counted as such they made the take-over pass over the
// files right after the cut: the file was neither told nor named, and
// the GET succeeded (a review's test; TestGetTakeOverTellsEachEndOnce's
// row "had 25" checks each file is told once).
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
		t.Fatal("f09 not in share 1: the test tests nothing (shares changed? pick another file)")
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
