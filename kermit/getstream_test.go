package kermit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// streamingFS is a filestore.Dir served as a kerf server serves its
// tree: a GET's files come from its walk one at a time
// (kermit.MatchStreamer).
type streamingFS struct{ *filestore.Dir }

func (f streamingFS) MatchEach(spec string, recursive bool, keep func(string) bool, yield func(kermit.OutgoingFile) bool) (int, error) {
	return f.MatchWalk(spec, recursive, keep, yield)
}

// gatedFS is a streamingFS whose walk, past its first file, waits
// until the server's engine has begun sending that file: a server that
// listed the whole tree before it sent anything (its Match or its
// MatchEach collected first) waits out the gate, and says so in late.
type gatedFS struct {
	streamingFS
	arrived chan struct{}
	mu      sync.Mutex
	late    bool
	yielded int
}

func (f *gatedFS) MatchEach(spec string, recursive bool, keep func(string) bool, yield func(kermit.OutgoingFile) bool) (int, error) {
	return f.streamingFS.MatchEach(spec, recursive, keep, func(o kermit.OutgoingFile) bool {
		if o.Dir {
			return yield(o)
		}
		f.mu.Lock()
		f.yielded++
		n := f.yielded
		f.mu.Unlock()
		if n == 2 {
			select {
			case <-f.arrived:
			case <-time.After(5 * time.Second):
				f.mu.Lock()
				f.late = true
				f.mu.Unlock()
			}
		}
		return yield(o)
	})
}

func (f *gatedFS) Match(spec string, recursive bool) ([]kermit.OutgoingFile, error) {
	var out []kermit.OutgoingFile
	_, err := f.MatchEach(spec, recursive, nil, func(o kermit.OutgoingFile) bool {
		out = append(out, o)
		return true
	})
	return out, err
}

// A server's GET sends from its walk: its first file is begun before
// the walk has found the rest, so that it holds no listing of the tree
// (memory independent of the files of a GET) and walking overlaps
// sending. Every file arrives.
func TestGetSendsFromTheWalk(t *testing.T) {
	root := t.TempDir()
	var names []string
	for i := range 40 {
		n := fmt.Sprintf("tree/d%d/f%02d", i%4, i)
		os.MkdirAll(filepath.Join(root, filepath.Dir(n)), 0o755)
		os.WriteFile(filepath.Join(root, n), []byte(n), 0o644)
		names = append(names, n)
	}
	dir, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	fsys := &gatedFS{streamingFS: streamingFS{dir}, arrived: make(chan struct{})}
	var once sync.Once
	scfg := kermit.DefaultConfig()
	scfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileStart {
			once.Do(func() { close(fsys.arrived) })
		}
	}
	cli, srv := dualSessions(t, kermit.DefaultConfig(), scfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go srv.Serve(ctx, fsys)
	dst := t.TempDir()
	store, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := cli.Get(ctx, "tree", true, store); err != nil {
		t.Fatal(err)
	}
	fsys.mu.Lock()
	if fsys.late {
		t.Error("the server walked on past its first file before sending it")
	}
	fsys.mu.Unlock()
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(dst, n)); err != nil || string(b) != n {
			t.Errorf("%s: %q, %v", n, b, err)
		}
	}
}

// countingFS is a streamingFS that counts the files its walks yielded.
type countingFS struct {
	streamingFS
	yielded atomic.Int32
}

func (f *countingFS) MatchEach(spec string, recursive bool, keep func(string) bool, yield func(kermit.OutgoingFile) bool) (int, error) {
	return f.streamingFS.MatchEach(spec, recursive, keep, func(o kermit.OutgoingFile) bool {
		f.yielded.Add(1)
		return yield(o)
	})
}

// A GET sent from the walk that stops part-way names at the server the
// files under way, with the transfer's error, and walks no further: the
// rest is not walked to be reported, since its client hears nothing of
// it (QA: the walk of the rest of a deep tree, for a client gone, held
// the session and the server's shutdown for minutes).
func TestGetFromTheWalkStoppedWalksNoFurther(t *testing.T) {
	root := t.TempDir()
	names := []string{"t/a.bin", "t/b.bin", "t/c.bin", "t/d/e.bin", "t/d/f.bin"}
	for i := range 200 {
		names = append(names, fmt.Sprintf("t/z/%03d.bin", i))
	}
	for i, n := range names {
		os.MkdirAll(filepath.Join(root, filepath.Dir(n)), 0o755)
		os.WriteFile(filepath.Join(root, n), randomBytes(1000*(i%5+1), int64(i)), 0o644)
	}
	dir, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	a, b := link(t, 0, 1)
	dst, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	// The client's link goes when the second file is announced.
	store := closingStore(dst, "b.bin", a)
	var ends endErrs
	scfg := kermit.DefaultConfig()
	scfg.Timeout, scfg.MaxRetries = 200*time.Millisecond, 2
	scfg.Events = ends.note
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, srv := kermit.NewSession(a, kermit.DefaultConfig()), kermit.NewSession(b, scfg)
	defer cli.Close()
	defer srv.Close()
	fsys := &countingFS{streamingFS: streamingFS{dir}}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, fsys) }()
	if err := cli.Get(ctx, "t", true, store); err == nil {
		t.Fatal("the get succeeded over a closed link")
	}
	<-served
	ends.mu.Lock()
	defer ends.mu.Unlock()
	if told := ends.m["t/b.bin"]; len(told) != 1 || told[0] == nil {
		t.Errorf("b.bin reported %v, want one failure", told)
	}
	for n, errs := range ends.m {
		for _, err := range errs {
			if errors.Is(err, kermit.ErrNotBegun) {
				t.Errorf("%s reported not begun: the rest was walked", n)
			}
		}
	}
	if n := fsys.yielded.Load(); n > 100 {
		t.Errorf("the walk yielded %d entries of %d for a GET cut off at its second file", n, len(names))
	}
}

// The listing a resuming GET checks (REMOTE DIRECTORY kerf-get-r) comes
// from the walk as it goes when the server streams (a tree's listing is
// never held whole), and says the same as the one made from Match: every
// file, with its size, mode and time; none of a name that is no file;
// the spec's error when it names nothing.
func TestGetListingFromTheWalk(t *testing.T) {
	root := t.TempDir()
	for i := range 700 {
		n := filepath.Join(root, "tree", fmt.Sprintf("d%02d", i%7), fmt.Sprintf("file %04d with a longer name.bin", i))
		os.MkdirAll(filepath.Dir(n), 0o755)
		os.WriteFile(n, randomBytes(i, int64(i)), 0o640)
	}
	os.MkdirAll(filepath.Join(root, "tree", "empty"), 0o755)
	dir, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	listing := func(fsys kermit.ServerFS, spec string) ([]string, error) {
		cli, srv := dualSessions(t, kermit.DefaultConfig(), kermit.DefaultConfig(), nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		go srv.Serve(ctx, fsys)
		ents, err := cli.GetListing(ctx, spec, true)
		var out []string
		for _, e := range ents {
			out = append(out, fmt.Sprintf("%s %d %o %d", e.Name, e.Size, e.Mode, e.ModTime.UnixNano()))
		}
		return out, err
	}
	want, err := listing(dir, "tree")
	if err != nil || len(want) != 700 {
		t.Fatalf("from Match: %d lines, %v", len(want), err)
	}
	got, err := listing(streamingFS{dir}, "tree")
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("from the walk: %d lines, %v; want the %d from Match", len(got), err, len(want))
	}
	if _, err := listing(streamingFS{dir}, "nothing-here"); err == nil {
		t.Error("a listing of a name that does not exist: no error")
	}
}
