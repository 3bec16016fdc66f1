package control

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"kerf/datachan"
)

// tlsRecordHandshake is the first byte of every TLS connection (a
// handshake record carrying the ClientHello). A Kermit packet starts with
// its MARK (SOH) and C-Kermit's "kermit -ir" text with a letter, so one
// byte tells them apart.
const tlsRecordHandshake = 0x16

// peekConn is a net.Conn whose first byte can be looked at before
// anyone reads it.
type peekConn struct {
	net.Conn
	buf []byte // bytes read ahead, returned first
}

// NetConn returns the connection underneath (datachan reaches the
// socket through it: a fetching client's congestion control).
func (c *peekConn) NetConn() net.Conn { return c.Conn }

// peek reads and keeps the first byte.
func (c *peekConn) peek() (byte, error) {
	if len(c.buf) == 0 {
		var b [1]byte
		if _, err := io.ReadFull(c.Conn, b[:]); err != nil {
			return 0, err
		}
		c.buf = b[:]
	}
	return c.buf[0], nil
}

func (c *peekConn) Read(p []byte) (int, error) {
	if len(c.buf) > 0 {
		n := copy(p, c.buf)
		c.buf = c.buf[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// dataListener hands datachan connections that decide for themselves,
// from their first byte, whether they are TLS: the data port serves
// both, and a plaintext connection is refused unless its token was
// issued for plaintext (plainOK).
type dataListener struct {
	net.Listener
	tlsConf *tls.Config
	plainOK func(datachan.Token) bool
	// lose, set by tests, resets connections before their hellos are
	// read: connections lost on the way while they pair.
	lose *connLoss
}

// connLoss says which data connections a test has lost: the first left.
type connLoss struct{ left, lost atomic.Int32 }

func (l *connLoss) next() bool {
	if l == nil || l.left.Add(-1) < 0 {
		return false
	}
	l.lost.Add(1)
	return true
}

func (l *dataListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	for err == nil && l.lose.next() {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
		c, err = l.Listener.Accept()
	}
	if err != nil {
		return nil, err
	}
	datachan.CapRTO(c) // before the wrapper hides the TCP connection
	return &dataConn{Conn: c, l: l}, nil
}

// The hello's layout (datachan/hello.go): "KERFDATA", version, stream
// index, 32-byte token. A plaintext connection's hello is checked here,
// before datachan sees it.
const (
	helloMagic = "KERFDATA"
	helloLen   = 42
	helloToken = 10
)

var errPlainRefused = errors.New("control: plaintext data connection for a TLS-only token")

// dataConn is one connection on the data port. Its first Read decides
// TLS or plaintext (datachan reads the hello before writing anything).
// Once paired, the session uses inner() directly.
type dataConn struct {
	net.Conn // the TCP connection
	l        *dataListener

	once  sync.Once
	err   error
	tls   *datachan.TLSConn
	buf   []byte // plaintext hello, replayed to datachan
	isTLS bool
}

func (c *dataConn) decide() {
	var first [1]byte
	if _, err := io.ReadFull(c.Conn, first[:]); err != nil {
		c.err = err
		return
	}
	if first[0] == tlsRecordHandshake {
		if c.l.tlsConf == nil {
			c.err = errors.New("control: TLS on the data port, which has no certificate")
			return
		}
		c.isTLS = true
		c.tls = datachan.TLSServer(&peekConn{Conn: c.Conn, buf: first[:]}, c.l.tlsConf)
		return
	}
	hello := make([]byte, helloLen)
	hello[0] = first[0]
	if _, err := io.ReadFull(c.Conn, hello[1:]); err != nil {
		c.err = err
		return
	}
	var tok datachan.Token
	copy(tok[:], hello[helloToken:])
	if !bytes.HasPrefix(hello, []byte(helloMagic)) || c.l.plainOK == nil || !c.l.plainOK(tok) {
		c.err = errPlainRefused
		return
	}
	c.buf = hello
}

func (c *dataConn) Read(p []byte) (int, error) {
	c.once.Do(c.decide)
	switch {
	case c.err != nil:
		return 0, c.err
	case c.tls != nil:
		return c.tls.Read(p)
	case len(c.buf) > 0:
		n := copy(p, c.buf)
		c.buf = c.buf[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

func (c *dataConn) Write(p []byte) (int, error) {
	c.once.Do(c.decide)
	switch {
	case c.err != nil:
		return 0, c.err
	case c.tls != nil:
		return c.tls.Write(p)
	}
	return c.Conn.Write(p)
}

// inner is the connection the data path should use once the hello is
// done: the TLS connection, or the bare TCP one (whose hello has been
// consumed), so that datachan's fast paths for *net.TCPConn apply.
func (c *dataConn) inner() net.Conn {
	if c.tls != nil {
		return c.tls
	}
	return c.Conn
}

// unwrapData returns the connections a Pending paired as the data path
// should use them, whether all of them are TLS on TCP, and how many are
// QUIC streams. A TLS connection whose data record keys cannot be
// derived (see datachan.TLSConn.Paired) fails them all.
func unwrapData(conns []net.Conn) (out []net.Conn, allTLS, anyTLS bool, nQUIC int, err error) {
	allTLS = true
	for _, c := range conns {
		if _, ok := c.(*datachan.QUICStream); ok {
			nQUIC++
			allTLS = false
			out = append(out, c)
			continue
		}
		dc, ok := c.(*dataConn)
		if !ok {
			out = append(out, c)
			allTLS = false
			continue
		}
		if dc.isTLS {
			anyTLS = true
			if perr := dc.tls.Paired(); perr != nil && err == nil {
				err = perr
			}
		} else {
			allTLS = false
		}
		out = append(out, dc.inner())
	}
	return out, allTLS, anyTLS, nQUIC, err
}
