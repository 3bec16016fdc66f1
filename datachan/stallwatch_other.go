//go:build !linux

package datachan

import (
	"net"
	"time"
)

// ackStateOf knows nothing elsewhere: TCP_INFO is Linux's.
func ackStateOf(net.Conn, time.Time) ackState { return ackState{} }

// stallWatchable: no stall watch elsewhere (stallwatch.go).
func stallWatchable([]net.Conn) (time.Duration, bool) { return 0, false }
