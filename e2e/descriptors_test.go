package e2e

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A server out of file descriptors stays up: a flood of connections (no
// login needed) past its limit makes its accepts fail for a while, and
// once they close it serves again (QA: it exited, status 2, on the
// first EMFILE). The limit is set with prlimit (util-linux).
func TestServerOutOfDescriptorsStaysUp(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed to limit the server's descriptors: %v", err)
	}
	root, local := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), []byte("still here"))
	srv := startServer(t, root, serverOpts{wrap: []string{prlimit, "--nofile=48:48"}, args: []string{"--handshake-timeout", "2s"}})
	var conns []net.Conn
	for range 80 {
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			break // the kernel's backlog is full: enough
		}
		conns = append(conns, c)
	}
	waitFor(t, "the server out of descriptors, or gone", func() bool {
		select {
		case <-srv.done:
			return true
		default:
			return strings.Contains(srv.stderr.String(), "cannot accept connections")
		}
	})
	for _, c := range conns {
		c.Close()
	}
	select {
	case <-srv.done:
		t.Fatalf("the server exited out of descriptors:\n%s", srv.stderr.String())
	case <-time.After(3 * time.Second):
	}
	r := mustRun(t, srv, local, nil, "get", target(srv.addr, "a.txt"), ".")
	sameFile(t, filepath.Join(root, "a.txt"), filepath.Join(local, "a.txt"))
	if !strings.Contains(srv.stderr.String(), "accepting connections again") {
		t.Errorf("the server did not say it accepts again:\n%s\n%s", r, srv.stderr.String())
	}
}

// A server under a low descriptor limit (64) still takes a tree of
// small files whole: its batches of received files hold at most a
// quarter of the limit open (QA: the batch's floor of 64 was the whole
// limit; 2,959 of 3,000 files failed "too many open files").
func TestServerTreeUnderLowDescriptorLimit(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed to limit the server's descriptors: %v", err)
	}
	root, local := t.TempDir(), t.TempDir()
	files := makeTree(t, local, "many", 1500)
	srv := startServer(t, root, serverOpts{wrap: []string{prlimit, "--nofile=64:64"}})
	mustRun(t, srv, local, nil, "send", "-r", "many", target(srv.addr, "up/"))
	checkTree(t, filepath.Join(root, "up"), files)
}
