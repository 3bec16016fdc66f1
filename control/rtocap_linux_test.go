package control_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kerf/control"
	"kerf/datachan"
)

// connectedTCP returns the descriptors of this process's connected TCP
// sockets.
func connectedTCP(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var fds []int
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		link, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || !strings.HasPrefix(link, "socket:") {
			continue
		}
		if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_STREAM {
			continue
		}
		sa, err := unix.Getpeername(fd)
		if err != nil {
			continue // a listener
		}
		switch sa.(type) {
		case *unix.SockaddrInet4, *unix.SockaddrInet6:
			fds = append(fds, fd)
		}
	}
	return fds
}

// Every TCP connection of a session, both ends of the control and of the
// data connections (dialled by the client, accepted by the server),
// caps its retransmission timeout (datachan.RTOMax): a review found only
// datachan's own Dial and Listen covered by a test.
func TestSessionConnectionsCapRTO(t *testing.T) {
	root, src := t.TempDir(), t.TempDir()
	srv := startServer(t, root)
	out := files(t, src, map[string][]byte{"f.bin": rnd(1<<20, 3)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := control.Dial(ctx, clientConfig(srv, func(c *control.ClientConfig) { c.Streams = 2 }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Send(ctx, out); err != nil {
		t.Fatal(err)
	}
	if !cl.Dual() {
		t.Fatal("no data channel")
	}
	fds := connectedTCP(t)
	// Control and two data connections, each with its two ends here.
	if len(fds) < 6 {
		t.Fatalf("%d connected TCP sockets in the process, want at least 6", len(fds))
	}
	for _, fd := range fds {
		ms, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_RTO_MAX_MS)
		if errors.Is(err, unix.ENOPROTOOPT) {
			t.Skipf("this kernel has no TCP_RTO_MAX_MS (Linux before 6.15): %v", err)
		}
		if err != nil || time.Duration(ms)*time.Millisecond != datachan.RTOMax {
			sa, _ := unix.Getsockname(fd)
			t.Errorf("socket %d (%v): TCP_RTO_MAX_MS %d, %v; want %v", fd, sa, ms, err, datachan.RTOMax)
		}
	}
}
