//go:build !linux

package datachan

import "net"

// setUDPBuffers asks for n-byte socket buffers on c.
func setUDPBuffers(c *net.UDPConn, n int) error {
	c.SetWriteBuffer(n)
	return c.SetReadBuffer(n)
}
