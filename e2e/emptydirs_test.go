package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A recursive send and get carry empty directories, as scp -r and rsync
// -r do: a tree's shape arrives, not only its files. A tree that is one
// empty directory arrives as that directory.
func TestEmptyDirectoriesTravel(t *testing.T) {
	root, src, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	tree := filepath.Join(src, "tree")
	for _, d := range []string{"tree/empty", "tree/a/deep/empty2", "tree/full", "lonely"} {
		os.MkdirAll(filepath.Join(src, d), 0o755)
	}
	os.WriteFile(filepath.Join(tree, "full", "f.txt"), []byte("f"), 0o644)
	mustRun(t, srv, src, nil, "send", "-r", tree, filepath.Join(src, "lonely"), target(srv.addr, "/up"))
	for _, d := range []string{"up/tree/empty", "up/tree/a/deep/empty2", "up/lonely"} {
		if fi, err := os.Stat(filepath.Join(root, d)); err != nil || !fi.IsDir() {
			t.Errorf("sent: %s not a directory on the server: %v", d, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "up/tree/full/f.txt")); err != nil || string(b) != "f" {
		t.Errorf("sent: f.txt = %q, %v", b, err)
	}
	mustRun(t, srv, back, nil, "get", "-r", target(srv.addr, "up"), back)
	for _, d := range []string{"up/tree/empty", "up/tree/a/deep/empty2", "up/lonely"} {
		if fi, err := os.Stat(filepath.Join(back, d)); err != nil || !fi.IsDir() {
			t.Errorf("fetched: %s not a directory: %v", d, err)
		}
	}
	os.MkdirAll(filepath.Join(root, "nothing"), 0o755)
	mustRun(t, srv, back, nil, "get", "-r", target(srv.addr, "nothing"), back)
	if fi, err := os.Stat(filepath.Join(back, "nothing")); err != nil || !fi.IsDir() {
		t.Errorf("get -r of an empty directory: %v", err)
	}
}

// An empty directory the receiver cannot make (a file has its name
// there) fails the send, exit 4, naming it with the receiver's reason;
// the rest of the tree still arrives.
func TestEmptyDirectoryNotMadeIsReportedToSender(t *testing.T) {
	root, src := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	os.MkdirAll(filepath.Join(src, "tree", "blocked"), 0o755)
	os.WriteFile(filepath.Join(src, "tree", "f.txt"), []byte("f"), 0o644)
	os.MkdirAll(filepath.Join(root, "tree"), 0o755)
	os.WriteFile(filepath.Join(root, "tree", "blocked"), []byte("a file"), 0o644)
	r := run(t, srv, src, nil, "send", "-r", "tree", srv.addr)
	if r.code != 4 || !strings.Contains(r.stderr, "blocked") || !strings.Contains(r.stderr, "not made by the receiver") {
		t.Fatalf("want exit 4 naming tree/blocked and the receiver's reason, got %s", r)
	}
	if b, err := os.ReadFile(filepath.Join(root, "tree", "f.txt")); err != nil || string(b) != "f" {
		t.Errorf("the tree's file: %q, %v", b, err)
	}
}
