package kermit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// A GET with exclusions leaves out, at the server, what they match:
// no excluded file or directory is sent or made. A server that does not
// take them (REMOTE SET refused) fails the GET rather than send all.
func TestGetExclude(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"tree/a.go", "tree/a.tmp", "tree/.git/HEAD", "tree/.git/objects/x", "tree/cache/c.bin", "tree/sub/cache", "tree/sub/b.go"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(root, f), []byte(f), 0o644)
	}
	for _, run := range []struct {
		sessions int
		serve    func(*filestore.Dir) kermit.ServerFS
	}{
		{1, func(d *filestore.Dir) kermit.ServerFS { return d }},
		{2, func(d *filestore.Dir) kermit.ServerFS { return d }},
		// As a kerf server serves: from its walk (MatchStreamer).
		{1, func(d *filestore.Dir) kermit.ServerFS { return streamingFS{d} }},
		{2, func(d *filestore.Dir) kermit.ServerFS { return streamingFS{d} }},
		{3, func(d *filestore.Dir) kermit.ServerFS { return streamingFS{d} }},
	} {
		sessions := run.sessions
		dst := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var clients []*kermit.Session
		var stores []kermit.Store
		for range sessions {
			cli, srv := dualSessions(t, kermit.DefaultConfig(), kermit.DefaultConfig(), nil)
			dir, err := filestore.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer dir.Close()
			go srv.Serve(ctx, run.serve(dir))
			store, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			clients, stores = append(clients, cli), append(stores, store)
		}
		o := kermit.GetOptions{Recursive: true, Exclude: []string{".git", "*.tmp", "cache/"}}
		if err := kermit.GetParallel(ctx, clients, "tree", o, stores); err != nil {
			t.Fatalf("%d sessions: %v", sessions, err)
		}
		for _, f := range []string{"tree/a.go", "tree/sub/cache", "tree/sub/b.go"} {
			if b, err := os.ReadFile(filepath.Join(dst, f)); err != nil || string(b) != f {
				t.Errorf("%d sessions: %s: %q, %v", sessions, f, b, err)
			}
		}
		for _, f := range []string{"tree/a.tmp", "tree/.git", "tree/cache"} {
			if _, err := os.Lstat(filepath.Join(dst, f)); err == nil {
				t.Errorf("%d sessions: %s arrived, though excluded", sessions, f)
			}
		}
	}

	// A server that refuses REMOTE SET.
	cli, srv := dualSessions(t, kermit.DefaultConfig(), kermit.DefaultConfig(), nil)
	dir, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go srv.Serve(ctx, refusingShares{dir})
	dst := t.TempDir()
	store, _ := filestore.Open(dst)
	defer store.Close()
	err = cli.GetWith(ctx, "tree", kermit.GetOptions{Recursive: true, Exclude: []string{"*.tmp"}}, store)
	if !errors.Is(err, kermit.ErrNoExclude) {
		t.Fatalf("GET with exclusions from a server without them: %v, want ErrNoExclude", err)
	}
	if ents, _ := os.ReadDir(dst); len(ents) != 0 {
		t.Errorf("files arrived from a server that took no exclusions: %v", ents)
	}
}
