//go:build !linux

package datachan

import (
	"fmt"
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

// CongestionControl is nil for "", and otherwise refuses to make sockets.
func CongestionControl(name string) func(network, address string, c syscall.RawConn) error {
	if name == "" {
		return nil
	}
	return func(string, string, syscall.RawConn) error { return CheckCongestion(name) }
}
