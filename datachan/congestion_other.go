//go:build !linux

package datachan

import (
	"fmt"
	"net"
	"syscall"
)

// CheckCongestion refuses any choice but the default: only Linux lets a
// socket pick its congestion control.
func CheckCongestion(name string) error {
	if name == "" {
		return nil
	}
	return fmt.Errorf("datachan: choosing the congestion control (%q) needs Linux", name)
}

// RTOCapped is false: only Linux caps a socket's retransmission timeout.
func RTOCapped() bool { return false }

// CapRTO does nothing: only Linux caps a socket's retransmission timeout.
func CapRTO(net.Conn) {}

// UncapRTO does nothing (see CapRTO).
func UncapRTO(net.Conn) {}

// SocketControl is nil for "" (other systems have no per-socket cap on
// the retransmission timeout), and otherwise refuses to make sockets.
func SocketControl(congestion string) func(network, address string, c syscall.RawConn) error {
	if congestion == "" {
		return nil
	}
	return func(string, string, syscall.RawConn) error { return CheckCongestion(congestion) }
}

// SetCongestion refuses (see CheckCongestion).
func (p *Path) SetCongestion(name string) error { return CheckCongestion(name) }
