//go:build !linux

package datachan

import (
	"net"
	"time"
)

// tcpState: nothing is known elsewhere (TCP_INFO is Linux's).
type tcpState struct {
	waiting   bool
	sinceAck  time.Duration
	sinceData time.Duration
}

func tcpStateOf(net.Conn) (tcpState, bool) { return tcpState{}, false }

// stallWatchable: no stall watch elsewhere (stallwatch.go).
func stallWatchable([]net.Conn) (time.Duration, bool) { return 0, false }
