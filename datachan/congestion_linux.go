package datachan

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

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

// CongestionControl returns a socket control function, for net.Dialer
// and net.ListenConfig, that sets the TCP congestion control of each
// socket to name before it connects or listens (sockets accepted from a
// listener inherit it); nil for "", the system's default. A name the
// kernel lacks, or one an unprivileged process may not choose (outside
// net.ipv4.tcp_allowed_congestion_control), fails the dial or listen.
func CongestionControl(name string) func(network, address string, c syscall.RawConn) error {
	if name == "" {
		return nil
	}
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("datachan: TCP congestion control %q: %w", name, serr)
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
