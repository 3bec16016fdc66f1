package datachan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kerf/internal/testproc"
)

// notDefaultCongestion returns a congestion control other than the
// system's default if the kernel has one (reno is always built in), so
// that the test sees the choice take effect.
func notDefaultCongestion(t *testing.T) string {
	def, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Fatal(err)
	}
	avail, err := os.ReadFile(availableCongestion)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range strings.Fields(string(avail)) {
		if a != strings.TrimSpace(string(def)) {
			return a
		}
	}
	return "reno"
}

// pairTwo dials two plaintext data connections to l and returns both
// ends of each: the client's dialled sockets, then the server's
// accepted ones.
func pairTwo(t *testing.T, l *Listener, opts ...DialOption) []net.Conn {
	t.Helper()
	tok := NewToken()
	pend := l.Expect(tok, net.IPv4(127, 0, 0, 1), 2, 10*time.Second)
	ctx := testContext(t)
	client, err := Dial(ctx, l.Addr().String(), tok, 2, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	server, err := pend.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return append(client, server...)
}

// Both ends of a data connection can pick the congestion control: the
// client's dialled sockets and the server's accepted ones (which take
// their listener's).
func TestSocketControl(t *testing.T) {
	cc := notDefaultCongestion(t)
	if err := CheckCongestion(cc); err != nil {
		t.Fatal(err)
	}
	lc := net.ListenConfig{Control: SocketControl(cc)}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(ln, nil)
	defer l.Close()
	for i, c := range pairTwo(t, l, WithCongestion(cc)) {
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		name, err := congestionOf(rc)
		if err != nil || name != cc {
			t.Fatalf("connection %d: congestion control %q, %v; want %q", i, name, err, cc)
		}
		c.Close()
	}
}

// A path's connections take a congestion control chosen after they are
// made (a fetching client's, told to the sending server), through TLS
// too; an unknown one is refused with the choices named.
func TestPathSetCongestion(t *testing.T) {
	cc := testproc.AllowedCongestion(t)
	allowed, _ := os.ReadFile(allowedCongestion)
	l, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conns := pairTwo(t, l)
	server := NewPath(conns[2:])
	defer server.Close()
	defer conns[0].Close()
	defer conns[1].Close()
	if err := server.SetCongestion(cc); err != nil {
		t.Fatal(err)
	}
	for i, c := range conns[2:] {
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		if name, err := congestionOf(rc); err != nil || name != cc {
			t.Errorf("server connection %d: congestion control %q, %v; want %q", i, name, err, cc)
		}
	}
	// Unknown, or known but not allowed to unprivileged processes: a
	// client does not choose it, root server or not; the refusal does
	// not list the server's modules.
	avail, _ := os.ReadFile(availableCongestion)
	refused := []string{"no-such-cc"}
	for _, a := range strings.Fields(string(avail)) {
		if !slices.Contains(strings.Fields(string(allowed)), a) {
			refused = append(refused, a)
		}
	}
	for _, name := range refused {
		if err := server.SetCongestion(name); err == nil || strings.Contains(err.Error(), "reno") {
			t.Errorf("SetCongestion(%s): %v; want refused, naming nothing of the kernel's", name, err)
		}
	}
}

// Data connections cap their retransmission timeout (RTOMax), dialled
// and accepted alike, without any option given.
func TestDataConnectionsCapRTO(t *testing.T) {
	l, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i, c := range pairTwo(t, l) {
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var ms int
		var gerr error
		rc.Control(func(fd uintptr) { ms, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RTO_MAX_MS) })
		if errors.Is(gerr, unix.ENOPROTOOPT) {
			t.Skipf("this kernel has no TCP_RTO_MAX_MS (Linux before 6.15): %v", gerr)
		}
		if gerr != nil || time.Duration(ms)*time.Millisecond != RTOMax {
			t.Errorf("connection %d: TCP_RTO_MAX_MS %d, %v; want %v", i, ms, gerr, RTOMax)
		}
		c.Close()
	}
}

func TestCongestionControlRefusesUnknown(t *testing.T) {
	err := CheckCongestion("no-such-cc")
	if err == nil || !strings.Contains(err.Error(), "reno") {
		t.Fatalf("CheckCongestion: %v, want an error listing what there is", err)
	}
	d := net.Dialer{Control: SocketControl("no-such-cc")}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if c, err := d.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("dial with an unknown congestion control succeeded")
	} else if !strings.Contains(err.Error(), `congestion control "no-such-cc"`) {
		t.Fatalf("dial error %v does not name the congestion control", err)
	}
}

// An unprivileged process is told when the congestion control it asks
// for is available but not allowed to it (before, it failed only at the
// data connections' dial, after the login). The check runs in a child
// process as uid 65534.
func TestCongestionNotAllowedUnprivileged(t *testing.T) {
	if name := os.Getenv("KERF_CONGESTION_CHILD"); name != "" {
		err := CheckCongestion(name)
		if err == nil || !strings.Contains(err.Error(), "not allowed to unprivileged processes") {
			fmt.Printf("CheckCongestion(%q) as uid %d: %v\n", name, os.Geteuid(), err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a child as another user")
	}
	avail, _ := os.ReadFile(availableCongestion)
	allowed, _ := os.ReadFile(allowedCongestion)
	var name string
	for _, a := range strings.Fields(string(avail)) {
		if !slices.Contains(strings.Fields(string(allowed)), a) {
			name = a
		}
	}
	if name == "" {
		t.Skipf("every available congestion control (%s) is allowed here", strings.TrimSpace(string(avail)))
	}
	testproc.RerunAs(t, testproc.WorldDir(t, "kerf-congestion-"), testproc.Nobody,
		"TestCongestionNotAllowedUnprivileged", "KERF_CONGESTION_CHILD="+name)
}
