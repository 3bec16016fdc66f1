package datachan

import (
	"fmt"
	"net"
)

// Tune sets TCP_NODELAY on c and, if bufBytes > 0, its SO_SNDBUF and
// SO_RCVBUF to bufBytes (the kernel may round or cap them: Linux doubles
// the value and caps it at net.core.[rw]mem_max). c may be a TLS
// connection or any wrapper with a NetConn method; connections that are
// not TCP (net.Pipe, say) are left alone.
func Tune(c net.Conn, bufBytes int) error {
	tc, ok := bareTCP(c)
	if !ok {
		return nil
	}
	if err := tc.SetNoDelay(true); err != nil {
		return fmt.Errorf("datachan: tune: %w", err)
	}
	if bufBytes > 0 {
		if err := tc.SetWriteBuffer(bufBytes); err != nil {
			return fmt.Errorf("datachan: tune: %w", err)
		}
		if err := tc.SetReadBuffer(bufBytes); err != nil {
			return fmt.Errorf("datachan: tune: %w", err)
		}
	}
	return nil
}

// bareTCP is the TCP connection under c's wrappers (TLS, rate limits),
// if it is one.
func bareTCP(c net.Conn) (*net.TCPConn, bool) {
	for {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	tc, ok := c.(*net.TCPConn)
	return tc, ok
}
