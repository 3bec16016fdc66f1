package control

import (
	"net"
	"time"

	"kerf/datachan"
)

// SetBeforeDataDial lets a test act just before the client dials its
// data connections, knowing their address and token.
func SetBeforeDataDial(c *ClientConfig, f func(addr string, tok datachan.Token)) {
	c.beforeDataDial = f
}

// ClassicRefusal is the E packet text for plain Kermit peers.
const ClassicRefusal = classicRefusal

// KillClient drops a client's connections abruptly, as a client process
// that dies would: the control connection under its TLS, then its data
// connections.
func KillClient(c *Client) {
	if tc, ok := c.conn.(interface{ NetConn() net.Conn }); ok {
		tc.NetConn().Close()
	} else {
		c.conn.Close()
	}
	time.Sleep(50 * time.Millisecond)
	if c.dual != nil && c.dual.path != nil {
		c.dual.path.Close()
	}
}

// CloseQUIC closes the server's QUIC listener, as a firewall dropping
// its UDP port would look to clients.
func CloseQUIC(s *Server) { s.ql.Close() }

// RefuseQUIC makes the server's QUIC listener refuse every connection,
// as one at its limits does.
func RefuseQUIC(s *Server) { s.ql.SetAdmit(func(net.IP) bool { return false }, 0) }

// SetClientHandshakeTimeout shortens the client's TLS handshake bound
// for a test; the returned func puts it back.
func SetClientHandshakeTimeout(d time.Duration) func() {
	old := clientHandshakeTimeout
	clientHandshakeTimeout = d
	return func() { clientHandshakeTimeout = old }
}

// OnIdleFree has s call f, not debug.FreeOSMemory, once it has had no
// session for after. Called before the server's first session.
func OnIdleFree(s *Server, after time.Duration, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeAfter, s.freeMemory = after, f
}

// LoseDataConns has the server reset the first n data connections it
// accepts before it reads their hellos: connections lost on the way
// while they pair.
func LoseDataConns(c *ServerConfig, n int) {
	c.loseDataConn = new(connLoss)
	c.loseDataConn.left.Store(int32(n))
}

// LostDataConns is how many data connections s reset (LoseDataConns).
func LostDataConns(s *Server) int { return int(s.cfg.loseDataConn.lost.Load()) }

// ForgetFewerStreamsSaid lets the next client say again that it was
// allowed fewer data connections than it asked for.
func ForgetFewerStreamsSaid() { fewerStreamsSaid.Store(false) }

// ServerOffer is the extension field a server answers a client's ext
// with (its data-channel offer), the offer withdrawn at once.
func ServerOffer(s *Server, clientExt string) string {
	d := &serverDual{srv: s, maxStreams: s.cfg.MaxStreams, ttl: time.Second}
	defer d.withdraw()
	return d.Offer(clientExt)
}

// ClientOffer is the extension field a client with cfg's choices sends.
func ClientOffer(streams int) string {
	return (&clientDual{streams: streams}).Offer("")
}
