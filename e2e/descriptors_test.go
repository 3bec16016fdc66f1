package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	for i := range 80 {
		// From five addresses: sixteen from one (its limit) are all it
		// holds, each newer one taking an older one's slot.
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i/16))}}
		c, err := d.Dial("tcp", srv.addr)
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

// A login the server cannot take for want of descriptors (opening the
// user's root fails EMFILE) is dialled again, as at a session limit,
// and succeeds once descriptors are free (QA f: "the server cannot open
// your directory", exit 3, at the first try). Idle connections fill the
// server's descriptors to one short of its limit, so that the client's
// own connection takes the last one.
func TestLoginOutOfDescriptorsDialledAgain(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed to limit the server's descriptors: %v", err)
	}
	const limit = 40
	root, local := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), []byte("served after all"))
	srv := startServer(t, root, serverOpts{wrap: []string{prlimit, fmt.Sprintf("--nofile=%d:%d", limit, limit)}, args: []string{"--handshake-timeout", "2m", "--max-sessions-per-addr", "100"}})
	fdDir := fmt.Sprintf("/proc/%d/fd", srv.cmd.Process.Pid)
	open := func() int { // descriptors numbered below the limit: one inherited above it takes no room
		es, err := os.ReadDir(fdDir)
		if err != nil {
			t.Fatalf("counting the server's descriptors: %v", err)
		}
		n := 0
		for _, e := range es {
			if fd, err := strconv.Atoi(e.Name()); err == nil && fd < limit {
				n++
			}
		}
		return n
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for open() < limit-1 {
		n := open()
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		waitFor(t, "the server to accept a connection", func() bool { return open() > n })
	}
	if n := open(); n != limit-1 {
		t.Fatalf("the server holds %d descriptors, want %d", n, limit-1)
	}
	got := make(chan result, 1)
	go func() {
		got <- run(t, srv, local, nil, "get", "--reconnect", "1m", target(srv.addr, "a.txt"), ".")
	}()
	waitLogLine(t, srv, "opening the user's root")
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	r := <-got
	if r.code != 0 {
		t.Fatalf("the get was not dialled again once descriptors were free: %s", r)
	}
	sameFile(t, filepath.Join(root, "a.txt"), filepath.Join(local, "a.txt"))
	if !strings.Contains(r.stderr, "out of open files") || !strings.Contains(r.stderr, "trying again") {
		t.Errorf("the get did not say why it dialled again:\n%s", r)
	}
}
