package e2e

import (
	"path/filepath"
	"testing"
)

// A partial left beside a file the server has whole (a replacement of
// it cut off) goes once `send --resume` finds the file there: the
// listing that finds it whole names the partial too, so the file is
// offered and the server's check, finding it whole, removes the
// partial. Before, it stayed for ever (QA o), whether the file was
// named at the top or sent within a tree.
func TestResumedSendRemovesStalePartial(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	data := randomBytes(300_000, 7)
	writeFile(t, filepath.Join(local, "F"), data)
	writeFile(t, filepath.Join(local, "tree", "T"), data)
	mustRun(t, srv, local, nil, "send", "F", target(srv.addr, "g/"))
	mustRun(t, srv, local, nil, "send", "-r", "tree", srv.addr)
	parts := []string{partName(filepath.Join(root, "g", "F")), partName(filepath.Join(root, "tree", "T"))}
	for _, p := range parts {
		writeFile(t, p, data[:100_000])
	}
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--resume", "F", target(srv.addr, "g/"))
	if n := len(eventsNamed(parseEvents(t, r.stdout), "file_done")); n != 0 {
		t.Errorf("send --resume F: %d files sent, want none (whole there):\n%s", n, r.stdout)
	}
	mustRun(t, srv, local, nil, "send", "--resume", "-r", "tree", srv.addr)
	for _, p := range parts {
		noFile(t, p)
	}
	sameFile(t, filepath.Join(local, "F"), filepath.Join(root, "g", "F"))
	sameFile(t, filepath.Join(local, "tree", "T"), filepath.Join(root, "tree", "T"))
}
