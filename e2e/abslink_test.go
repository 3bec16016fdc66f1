package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A served tree's absolute symbolic link into the tree is fetched as its
// file (QA ab: a get -r of such a tree exited 4, "leads outside your
// directory"); one leading out of the tree is still refused, saying so.
func TestGetAbsoluteLinkIntoTheTree(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "data/v2/f.txt"), []byte("v2\n"))
	if err := os.Symlink(filepath.Join(root, "data/v2/f.txt"), filepath.Join(root, "data/latest.txt")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, srv, local, nil, "get", "-r", target(srv.addr, "data"), ".")
	sameContent(t, filepath.Join(local, "data/latest.txt"), []byte("v2\n"))
	outside := filepath.Join(t.TempDir(), "secret.txt")
	writeFile(t, outside, []byte("secret\n"))
	if err := os.Symlink(outside, filepath.Join(root, "data/out.txt")); err != nil {
		t.Fatal(err)
	}
	r := run(t, srv, t.TempDir(), nil, "get", "-r", target(srv.addr, "data"), ".")
	if r.code == 0 || !strings.Contains(r.stderr, "leads outside your directory") {
		t.Errorf("a link out of the tree: %s\nwant it refused, saying why", r)
	}
}
