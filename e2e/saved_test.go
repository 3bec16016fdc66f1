package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// --json says when each file is saved under its name (file_saved), once,
// after its file_done, both ways: a script can act on files as they
// become safe, not only at the end.
func TestJSONSaysEachFileSaved(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	var names []string
	for i := range 30 {
		n := fmt.Sprintf("tree/d%d/f%02d", i%3, i)
		writeFile(t, filepath.Join(local, n), randomBytes(1000+i, uint64(i)))
		names = append(names, n)
	}
	check := func(t *testing.T, stdout, dir string) {
		t.Helper()
		evs := parseEvents(t, stdout)
		order := map[string][]string{}
		for _, e := range evs {
			if e.Event == "file_done" || e.Event == "file_saved" {
				order[e.Name] = append(order[e.Name], e.Event)
			}
		}
		for _, n := range names {
			if got := order[n]; len(got) != 2 || got[0] != "file_done" || got[1] != "file_saved" {
				t.Errorf("%s: %v, want file_done then file_saved", n, got)
			}
			if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
				t.Errorf("%s told saved: %v", n, err)
			}
		}
	}
	t.Run("send", func(t *testing.T) {
		r := mustRun(t, srv, local, []string{"--json"}, "send", "-r", "tree", srv.addr)
		check(t, r.stdout, root)
	})
	t.Run("get", func(t *testing.T) {
		r := mustRun(t, srv, back, []string{"--json"}, "get", "-r", target(srv.addr, "tree"), ".")
		check(t, r.stdout, back)
	})
}
