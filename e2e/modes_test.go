package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Permission bits survive a send and a get, 000 included (a file nobody
// may read is still sent by its owner's kerf and must not arrive 0644).
func TestModesSurvive(t *testing.T) {
	root, src, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	modes := []os.FileMode{0o000, 0o400, 0o640, 0o751, 0o777}
	if os.Geteuid() != 0 {
		// Only root can read a mode-000 file to send it.
		t.Log("not root: mode 000 left out")
		modes = modes[1:]
	}
	var names []string
	for _, m := range modes {
		p := filepath.Join(src, fmt.Sprintf("m%03o", m))
		os.WriteFile(p, []byte(p), 0o600)
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
		names = append(names, p)
	}
	mustRun(t, srv, src, nil, "send", append(names, target(srv.addr, "/"))...)
	mustRun(t, srv, back, nil, "get", target(srv.addr, "m*"), back)
	for _, m := range modes {
		n := fmt.Sprintf("m%03o", m)
		for _, dir := range []string{root, back} {
			fi, err := os.Stat(filepath.Join(dir, n))
			if err != nil {
				t.Errorf("%s in %s: %v", n, dir, err)
			} else if fi.Mode().Perm() != m {
				t.Errorf("%s in %s: mode %v; want %v", n, dir, fi.Mode().Perm(), m)
			}
		}
	}
}
