package datachan

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// setUDPBuffers asks for n-byte receive and send buffers on c, beyond
// net.core.[rw]mem_max where the process may (CAP_NET_ADMIN), and
// reports an error if the receive buffer stays under n (Linux reports
// twice what it grants for bookkeeping, hence the halving).
func setUDPBuffers(c *net.UDPConn, n int) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var got int
	var gerr error
	cerr := rc.Control(func(fd uintptr) {
		for _, opt := range [][2]int{{unix.SO_RCVBUF, unix.SO_RCVBUFFORCE}, {unix.SO_SNDBUF, unix.SO_SNDBUFFORCE}} {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt[1], n) != nil {
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt[0], n)
			}
		}
		got, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	})
	if cerr != nil {
		return cerr
	}
	if gerr != nil {
		return gerr
	}
	if got/2 < n {
		return fmt.Errorf("the UDP receive buffer is %d KiB, not the %d KiB QUIC wants on fast paths (raise net.core.rmem_max)", got/2/1024, n/1024)
	}
	return nil
}
