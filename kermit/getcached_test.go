package kermit_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// cachedFS is a ServerFS (not a MatchStreamer) whose Match hands out a
// listing it keeps, as a server with a cached index of its tree may:
// ServerFS.Match says nothing of the caller owning the slice.
type cachedFS struct {
	*filestore.Dir
	files []kermit.OutgoingFile
}

func (c *cachedFS) Match(spec string, recursive bool) ([]kermit.OutgoingFile, error) {
	if c.files == nil {
		files, err := c.Dir.Match(spec, recursive)
		if err != nil {
			return nil, err
		}
		c.files = files
	}
	return c.files, nil
}

// A GET filters a Match list into a list of its own: one that the
// ServerFS keeps is not overwritten (a second GET then sent zeroed
// entries and the server panicked on their nil Open; review).
func TestGetLeavesTheMatchListAlone(t *testing.T) {
	root := t.TempDir()
	names := []string{"t/a.tmp", "t/b", "t/c"}
	for _, n := range names {
		os.MkdirAll(filepath.Join(root, filepath.Dir(n)), 0o755)
		os.WriteFile(filepath.Join(root, n), []byte(n), 0o644)
	}
	dir, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	fsys := &cachedFS{Dir: dir}
	cli, srv := dualSessions(t, kermit.DefaultConfig(), kermit.DefaultConfig(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go srv.Serve(ctx, fsys)

	dst1 := t.TempDir()
	s1, _ := filestore.Open(dst1)
	defer s1.Close()
	if err := cli.GetWith(ctx, "t", kermit.GetOptions{Recursive: true, Exclude: []string{"*.tmp"}}, s1); err != nil {
		t.Fatal(err)
	}
	dst2 := t.TempDir()
	s2, _ := filestore.Open(dst2)
	defer s2.Close()
	if err := cli.GetWith(ctx, "t", kermit.GetOptions{Recursive: true}, s2); err != nil {
		t.Fatalf("second GET: %v", err)
	}
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(dst2, n)); err != nil || string(b) != n {
			t.Errorf("second GET, %s: %q, %v", n, b, err)
		}
	}
}
