package control

import "kerf/datachan"

// SetBeforeDataDial lets a test act just before the client dials its
// data connections, knowing their address and token.
func SetBeforeDataDial(c *ClientConfig, f func(addr string, tok datachan.Token)) {
	c.beforeDataDial = f
}

// ClassicRefusal is the E packet text for plain Kermit peers.
const ClassicRefusal = classicRefusal
