package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"kerf/internal/testproc"
)

// A get's --congestion is asked of the server, which sends: over TLS
// and plaintext data alike, through the server's own wrappers of its
// data connections. (QA: it changed nothing on a pull; then, at first,
// the server found its accepted connections "not TCP".)
func TestGetAsksServerForCongestion(t *testing.T) {
	cc := testproc.AllowedCongestion(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "f.bin"), randomBytes(200_000, 5))
	for _, plain := range []bool{false, true} {
		srv := startServer(t, root, serverOpts{plain: plain})
		local := t.TempDir()
		args := []string{"--congestion", cc, target(srv.addr, "f.bin"), "."}
		if plain {
			args = append([]string{"--plain-data"}, args...)
		}
		r := mustRun(t, srv, local, nil, "get", args...)
		sameFile(t, filepath.Join(root, "f.bin"), filepath.Join(local, "f.bin"))
		if strings.Contains(r.stderr, "own TCP congestion control") {
			t.Errorf("plain %v: the server would not send with %s:\n%s", plain, cc, r.stderr)
		}
		waitFor(t, "the server's word that it sends with "+cc, func() bool {
			return strings.Contains(srv.stderr.String(), "congestion="+cc)
		})
	}
}
