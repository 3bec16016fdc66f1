package datachan

import (
	"bufio"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
)

// TLSConn is a TLS data connection that, once Batch is called, sends
// the records of one Write together. crypto/tls writes each record (at
// most 16 KiB of data) with its own write on the connection: 64
// syscalls, and as many trips through the TCP stack, per MiB of a
// block. Underneath the tls.Conn a recordBatcher gathers them, and Write
// sends them with one write when the block is done. Until Batch (during
// the handshake and the hello, when the peer is waiting for each
// message) nothing is held back.
type TLSConn struct {
	*tls.Conn
	b       *recordBatcher
	writing atomic.Int32 // Writes in progress
}

// TLSClient and TLSServer return a TLSConn over c, as tls.Client and
// tls.Server do.
func TLSClient(c net.Conn, conf *tls.Config) *TLSConn {
	b := &recordBatcher{Conn: c}
	return &TLSConn{Conn: tls.Client(b, conf), b: b}
}

func TLSServer(c net.Conn, conf *tls.Config) *TLSConn {
	b := &recordBatcher{Conn: c}
	return &TLSConn{Conn: tls.Server(b, conf), b: b}
}

// Batch starts gathering the records of each Write.
func (c *TLSConn) Batch() { c.b.batch() }

func (c *TLSConn) Write(p []byte) (int, error) {
	c.writing.Add(1)
	defer c.writing.Add(-1)
	n, err := c.Conn.Write(p)
	if ferr := c.b.flush(); err == nil {
		err = ferr
	}
	return n, err
}

// Close breaks a Write in flight instead of queueing the close_notify
// behind it, as tls.Conn.Close does for its own writes (a block stuck
// on a peer that stopped reading would hold Close for crypto/tls's
// 5-second close_notify deadline). Otherwise it stops batching, so
// that the close_notify goes straight out, and closes.
func (c *TLSConn) Close() error {
	if c.writing.Load() > 0 {
		c.b.Conn.Close()
		return c.Conn.Close()
	}
	c.b.unbatch()
	return c.Conn.Close()
}

// NetConn returns the connection under TLS (for Tune).
func (c *TLSConn) NetConn() net.Conn { return c.b.Conn }

// recordBatcher passes writes through, or after batch holds them for
// flush. Its lock also covers writes tls makes from its read side (a
// KeyUpdate answer); those go out with the next flush.
type recordBatcher struct {
	net.Conn
	mu sync.Mutex
	w  *bufio.Writer // nil: pass writes through
}

// tlsBatchBytes is the batcher's buffer: a full buffer is written out
// at once, so a 1 MiB block goes out in four writes.
const tlsBatchBytes = 256 << 10

func (b *recordBatcher) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.w == nil {
		return b.Conn.Write(p)
	}
	return b.w.Write(p)
}

func (b *recordBatcher) batch() {
	b.mu.Lock()
	if b.w == nil {
		b.w = bufio.NewWriterSize(b.Conn, tlsBatchBytes)
	}
	b.mu.Unlock()
}

// unbatch writes out what is held and passes later writes through.
func (b *recordBatcher) unbatch() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.w != nil {
		b.w.Flush()
		b.w = nil
	}
}

func (b *recordBatcher) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.w == nil {
		return nil
	}
	return b.w.Flush()
}

// Close tries to send what is held, then closes.
func (b *recordBatcher) Close() error {
	b.flush()
	return b.Conn.Close()
}
