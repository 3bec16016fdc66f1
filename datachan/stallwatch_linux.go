package datachan

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// tcpState is what the kernel says of a connection (TCP_INFO) for the
// stall watch.
type tcpState struct {
	waiting   bool          // data out and unacknowledged, window probes unanswered, or data not sent
	sinceAck  time.Duration // since an acknowledgement (of anything) last came
	sinceData time.Duration // since data last came (not a keepalive's answer)
}

// onSocket runs f on the socket of the TCP connection under c's
// wrappers (TLS, rate limits) and reports whether it could, and f did
// not fail.
func onSocket(c net.Conn, f func(fd int) error) bool {
	tc, ok := bareTCP(c)
	if !ok {
		return false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return false
	}
	return ferr == nil
}

// tcpStateOf asks the kernel about c, if it is a TCP connection.
func tcpStateOf(c net.Conn) (tcpState, bool) {
	var info *unix.TCPInfo
	if !onSocket(c, func(fd int) (err error) {
		info, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		return err
	}) {
		return tcpState{}, false
	}
	// Probes: a peer whose window was shut when its path went (a reader
	// held to --limit-rate often has it so) has its data here, unsent,
	// and the probes for its window go unanswered.
	return tcpState{
		waiting:   info.Unacked > 0 || info.Probes > 0 || info.Notsent_bytes > 0,
		sinceAck:  time.Duration(info.Last_ack_recv) * time.Millisecond,
		sinceData: time.Duration(info.Last_data_recv) * time.Millisecond,
	}, true
}

// stallWatchable reports whether conns can be watched for a stall, and
// the grace then: several TCP connections whose retransmission timeout
// is capped (TCP_RTO_MAX_MS, Linux 6.15 on). Uncapped, a connection
// retries up to 120 s after its siblings once an outage ends, and TCP's
// own give-up comes about as soon as a grace that allowed for it.
func stallWatchable(conns []net.Conn) (time.Duration, bool) {
	if len(conns) < 2 {
		return 0, false // one connection silent is the link's outage
	}
	most := time.Duration(0)
	for _, c := range conns {
		var ms int
		if !onSocket(c, func(fd int) (err error) {
			ms, err = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_RTO_MAX_MS)
			return err
		}) {
			return 0, false
		}
		most = max(most, time.Duration(ms)*time.Millisecond)
	}
	if most <= 0 || most > RTOMax {
		return 0, false
	}
	return stallGrace(most), true
}
