package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file a get cannot store here is said to have failed here, and
// where, not only in the file system's words (QA ar: "filestore: openat
// x: permission denied" named neither this machine nor the directory).
func TestGetLocalFailureSaysHere(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "x.bin"), randomBytes(5000, 1))
	writeFile(t, filepath.Join(root, "y.bin"), randomBytes(6000, 2))
	// A directory, not empty, where x.bin would go.
	writeFile(t, filepath.Join(local, "x.bin", "keep"), []byte("k"))
	r := run(t, srv, local, nil, "get", target(srv.addr, "x.bin"), target(srv.addr, "y.bin"), ".")
	if r.code != 4 || !strings.Contains(r.stderr, "x.bin") || !strings.Contains(r.stderr, "(here, in .)") {
		t.Fatalf("get with a directory in x.bin's place: %s\nwant exit 4, x.bin said to fail here, in .", r)
	}
	if strings.Contains(r.stderr, "y.bin") {
		t.Errorf("y.bin, fetched, is named as failed:\n%s", r.stderr)
	}
	sameContent(t, filepath.Join(local, "y.bin"), randomBytes(6000, 2))
	if _, err := os.Stat(filepath.Join(local, "x.bin", "keep")); err != nil {
		t.Errorf("the directory in the way: %v", err)
	}
}
