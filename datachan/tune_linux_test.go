package datachan

import (
	"net"
	"syscall"
	"testing"
)

func sockopt(t *testing.T, c net.Conn, level, opt int) int {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return v
}

func TestTune(t *testing.T) {
	cc, sc := pairedConns(t, 1)
	defer closeAll(cc)
	defer closeAll(sc)
	c := cc[0]
	rc := c.(*net.TCPConn)
	rc.SetNoDelay(false)
	if sockopt(t, c, syscall.IPPROTO_TCP, syscall.TCP_NODELAY) != 0 {
		t.Fatal("could not clear TCP_NODELAY")
	}
	const buf = 96 << 10
	if err := Tune(c, buf); err != nil {
		t.Fatal(err)
	}
	if sockopt(t, c, syscall.IPPROTO_TCP, syscall.TCP_NODELAY) == 0 {
		t.Error("TCP_NODELAY not set")
	}
	// Linux reports twice the value set.
	if got := sockopt(t, c, syscall.SOL_SOCKET, syscall.SO_SNDBUF); got != 2*buf {
		t.Errorf("SO_SNDBUF = %d, want %d", got, 2*buf)
	}
	if got := sockopt(t, c, syscall.SOL_SOCKET, syscall.SO_RCVBUF); got != 2*buf {
		t.Errorf("SO_RCVBUF = %d, want %d", got, 2*buf)
	}
	// Not TCP: nothing to do.
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if err := Tune(a, buf); err != nil {
		t.Fatal(err)
	}
}
