package datachan

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// availableCongestion lists the congestion controls this kernel offers,
// allowedCongestion those an unprivileged process may choose.
const (
	availableCongestion = "/proc/sys/net/ipv4/tcp_available_congestion_control"
	allowedCongestion   = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
)

// CheckCongestion reports an error naming the choices if this kernel
// offers no TCP congestion control called name ("" is the system's
// default and always fine).
func CheckCongestion(name string) error {
	if name == "" {
		return nil
	}
	b, err := os.ReadFile(availableCongestion)
	if err != nil {
		return fmt.Errorf("datachan: congestion control %q: cannot list this kernel's: %w", name, err)
	}
	avail := strings.Fields(string(b))
	if !slices.Contains(avail, name) {
		return fmt.Errorf("datachan: congestion control %q is not available here (this kernel offers %s; others may need their module loaded, e.g. modprobe tcp_%s)",
			name, strings.Join(avail, ", "), name)
	}
	if os.Geteuid() != 0 {
		// An unprivileged process may pick only the allowed ones.
		if b, err := os.ReadFile(allowedCongestion); err == nil {
			if allowed := strings.Fields(string(b)); !slices.Contains(allowed, name) {
				return fmt.Errorf("datachan: congestion control %q is not allowed to unprivileged processes here (allowed: %s; root can add it to net.ipv4.tcp_allowed_congestion_control)",
					name, strings.Join(allowed, ", "))
			}
		}
	}
	return nil
}

// RTOCapped reports whether this kernel caps connections' retransmission
// timeout at RTOMax (TCP_RTO_MAX_MS, Linux 6.15 on): a peer then gives
// this side's connections a shorter grace (WithHeldWatch).
func RTOCapped() bool {
	rtoCappedOnce.Do(func() {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		rtoCapped = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_RTO_MAX_MS, int(RTOMax/time.Millisecond)) == nil
	})
	return rtoCapped
}

var (
	rtoCappedOnce sync.Once
	rtoCapped     bool
)

// CapRTO caps the retransmission timeout of c (RTOMax), a TCP connection
// accepted from a listener: unlike the congestion control, the cap is
// not inherited from the listening socket (checked on Linux 6.18). Other
// connections, and kernels without the option, are left as they are.
func CapRTO(c net.Conn) { setRTOMax(c, RTOMax) }

// setRTOMax sets c's TCP_RTO_MAX_MS, if c is a TCP connection and the
// kernel has the option.
func setRTOMax(c net.Conn, d time.Duration) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	if rc, err := tc.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RTO_MAX_MS, int(d/time.Millisecond))
		})
	}
}

// UncapRTO gives c back the kernel's own cap on the retransmission
// timeout (120 s): for a connection whose outages nothing else ends
// sooner (a classic Kermit peer sends no keepalives), so that the
// kernel's tries last their usual 15 minutes.
func UncapRTO(c net.Conn) { setRTOMax(c, RTOUncapped) }

// SocketControl returns a socket control function, for net.Dialer and
// net.ListenConfig, that caps the retransmission timeout (RTOMax; a
// kernel without the option is left as it is; accepted sockets do not
// inherit it: CapRTO) and, unless congestion is "", sets the TCP
// congestion control to congestion before the socket connects or
// listens (accepted sockets inherit that). A name the kernel lacks, or one an unprivileged process may
// not choose (outside net.ipv4.tcp_allowed_congestion_control), fails
// the dial or listen.
func SocketControl(congestion string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			// ENOPROTOOPT before Linux 6.15: nothing to do about it.
			unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RTO_MAX_MS, int(RTOMax/time.Millisecond))
			if congestion != "" {
				serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, congestion)
			}
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("datachan: TCP congestion control %q: %w", congestion, serr)
		}
		return nil
	}
}

// congestionOf returns the congestion control of c's socket, for tests
// and logs.
func congestionOf(c syscall.RawConn) (string, error) {
	var name string
	var gerr error
	err := c.Control(func(fd uintptr) {
		name, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	if err != nil {
		return "", err
	}
	return strings.TrimRight(name, "\x00"), gerr
}

// SetCongestion sets the TCP congestion control of the path's data
// connections, as the peer that receives on them asks: a client
// fetching asks its server for its --congestion (REMOTE SET
// kerf-congestion), since the sender's choice is the one that counts
// (QA: get --congestion bbr changed nothing). Only one of the kernel's
// tcp_allowed_congestion_control (those it lets unprivileged processes
// pick), even for a server running as root: a client does not choose
// among every module loaded for other uses (review). The refusal names
// nothing of the server's kernel. QUIC streams have quic-go's own and
// refuse.
func (p *Path) SetCongestion(name string) error {
	b, err := os.ReadFile(allowedCongestion)
	if err != nil || !slices.Contains(strings.Fields(string(b)), name) {
		return fmt.Errorf("datachan: congestion control %q is not one this server lets clients choose", name)
	}
	n := 0
	set := SocketControl(name) // as on a dialled or accepted socket
	for _, st := range p.streams {
		tc, ok := bareTCP(st.conn)
		if !ok {
			continue
		}
		raw, err := tc.SyscallConn()
		if err != nil {
			return fmt.Errorf("datachan: congestion control: %w", err)
		}
		if err := set("tcp", "", raw); err != nil {
			return err // its words say what
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("datachan: congestion control %q: the data connections are not TCP (QUIC has its own)", name)
	}
	return nil
}
