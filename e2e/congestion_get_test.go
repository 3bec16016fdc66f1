package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A get's --congestion is asked of the server, which sends: over TLS
// and plaintext data alike, through the server's own wrappers of its
// data connections. (QA: it changed nothing on a pull; then, at first,
// the server found its accepted connections "not TCP".)
func TestGetAsksServerForCongestion(t *testing.T) {
	// One a client may choose (tcp_allowed_congestion_control) that is
	// not the default, so that the choice shows.
	def, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	allowed, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
	cc := ""
	for _, a := range strings.Fields(string(allowed)) {
		if a != strings.TrimSpace(string(def)) {
			cc = a
		}
	}
	if cc == "" {
		t.Skipf("no congestion control allowed here but the default (%s): nothing to see change", allowed)
	}
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
