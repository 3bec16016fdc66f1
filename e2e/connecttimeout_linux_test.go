package e2e

import (
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server whose SYNs go unanswered (here a listener whose queue is full,
// which the kernel makes drop them, as a firewall would) is given up on
// after --connect-timeout, saying why, exit 3 (QA: a minute and more of
// the kernel's retries, and no flag to shorten it).
func TestConnectTimeout(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	// Fill the queue (never accepted): the next SYNs are dropped.
	for range 3 {
		if c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond); err == nil {
			defer c.Close()
		}
	}
	r := run(t, nil, t.TempDir(), nil, "ls", "--connect-timeout", "2s", "--accept-new-host-key", target(addr, ""))
	if r.code != 3 || !strings.Contains(r.stderr, "no answer in 2s") || !strings.Contains(r.stderr, "--connect-timeout") {
		t.Errorf("want exit 3 saying no answer came in 2s:\n%s", r)
	}
}
