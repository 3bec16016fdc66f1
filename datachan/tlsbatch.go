package datachan

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// TLSConn is a TLS data connection. Until Paired it is plain crypto/tls
// (the handshake and the hello). Paired then switches it to the data
// records of records.go when both ends offered them in the handshake
// (ALPN alpnRecords), or else keeps TLS records and sends those of one
// Write together: crypto/tls writes each record (at most 16 KiB of
// data) with its own write on the connection, 64 syscalls and as many
// trips through the TCP stack per MiB of a block, so underneath the
// tls.Conn a recordBatcher gathers them and Write sends them with one
// write when the block is done.
type TLSConn struct {
	*tls.Conn
	b       *recordBatcher
	client  bool
	writing atomic.Int32 // Writes in progress

	mu      sync.Mutex // orders Paired and Close
	pairedW bool       // the write side switched (pairWrite)
	pairedR bool       // the read side switched (pairRead)
	closed  bool
	// The data records of each direction, once pairing chose them: a
	// client that writes behind its hello (DialEarly) switches its
	// write side at once and its read side once the answer is read.
	recW atomic.Pointer[recordWriter]
	recR atomic.Pointer[recordReader]
}

// TLSClient and TLSServer return a TLSConn over c, as tls.Client and
// tls.Server do. Both offer data records (ALPN) on top of conf's own
// protocols.
func TLSClient(c net.Conn, conf *tls.Config) *TLSConn {
	b := &recordBatcher{Conn: c}
	b.exact.Store(true)
	return &TLSConn{Conn: tls.Client(b, OfferRecords(conf)), b: b, client: true}
}

func TLSServer(c net.Conn, conf *tls.Config) *TLSConn {
	b := &recordBatcher{Conn: c}
	b.exact.Store(true)
	return &TLSConn{Conn: tls.Server(b, OfferRecords(conf)), b: b}
}

// OfferRecords returns conf, or a clone of it, that also offers data
// records (ALPN). TLSClient and TLSServer apply it to every connection;
// whoever keeps a config for many connections (Dial, NewListener, a
// server's data listener) applies it once, so that connections do not
// each clone it (a server clone has its own session-ticket keys).
func OfferRecords(conf *tls.Config) *tls.Config {
	if conf == nil || slices.Contains(conf.NextProtos, alpnRecords) {
		return conf
	}
	c := conf.Clone()
	c.NextProtos = append([]string{alpnRecords}, conf.NextProtos...)
	return c
}

// recordsAgreed reports whether a finished handshake chose data records:
// both offered them, and the connection is TLS 1.3 with AES-128-GCM (a
// peer without AES hardware has its TLS choose ChaCha20, and keeps it).
// Both ends see the same state and so decide alike.
func recordsAgreed(st tls.ConnectionState) bool {
	return st.NegotiatedProtocol == alpnRecords && st.Version == tls.VersionTLS13 &&
		st.CipherSuite == tls.TLS_AES_128_GCM_SHA256
}

// Paired is called once, when the hello is done on both sides: this end
// has sent nothing since the hello's answer, and has read nothing past
// the record that carried its hello or answer (exact reads), though a
// client that wrote behind its hello (DialEarly) may have sent more;
// such a client switches its two sides itself (pairWrite, pairRead).
// From here the connection carries data records if the handshake agreed
// on them, batched TLS records if not.
// It fails if called again, after Close, or if the record keys cannot
// be derived.
func (c *TLSConn) Paired() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.pairWriteLocked(); err != nil {
		return err
	}
	return c.pairReadLocked()
}

// pairWrite switches the write side alone: a client that writes behind
// its hello (DialEarly), before the answer; pairRead switches the read
// side once the answer is read. Each once, as Paired.
func (c *TLSConn) pairWrite() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pairWriteLocked()
}

func (c *TLSConn) pairRead() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pairReadLocked()
}

func (c *TLSConn) pairWriteLocked() error {
	switch {
	case c.pairedW:
		// A second set of records from the same secrets would reuse nonces.
		return errors.New("datachan: data connection paired twice")
	case c.closed:
		return net.ErrClosed
	}
	c.pairedW = true
	if !recordsAgreed(c.ConnectionState()) {
		c.b.batch()
		return nil
	}
	ws, err := c.recordSecret(true)
	if err != nil {
		return err
	}
	c.recW.Store(&recordWriter{w: c.b.Conn, keys: recordKeys{secret: ws}})
	return nil
}

func (c *TLSConn) pairReadLocked() error {
	switch {
	case c.pairedR:
		return errors.New("datachan: data connection paired twice")
	case c.closed:
		return net.ErrClosed
	}
	c.pairedR = true
	if recordsAgreed(c.ConnectionState()) {
		rs, err := c.recordSecret(false)
		if err != nil {
			return err
		}
		// The exact reads made sure crypto/tls buffered nothing past the
		// hello's answer, so the raw connection starts at the first record.
		c.recR.Store(&recordReader{r: c.b.Conn, keys: recordKeys{secret: rs}})
	}
	c.b.exact.Store(false)
	return nil
}

// recordSecret derives the data records' secret of this end's writes
// (out) or reads.
func (c *TLSConn) recordSecret(out bool) ([]byte, error) {
	label := exporterServerToClient
	if out == c.client {
		label = exporterClientToServer
	}
	st := c.ConnectionState()
	sec, err := st.ExportKeyingMaterial(label, nil, 32)
	if err != nil {
		return nil, fmt.Errorf("datachan: data record keys: %w", err)
	}
	return sec, nil
}

// Records reports whether the connection carries data records.
func (c *TLSConn) Records() bool { return c.recW.Load() != nil }

func (c *TLSConn) Read(p []byte) (int, error) {
	if r := c.recR.Load(); r != nil {
		return r.Read(p)
	}
	return c.Conn.Read(p)
}

func (c *TLSConn) Write(p []byte) (int, error) {
	if w := c.recW.Load(); w != nil {
		return w.Write(p)
	}
	c.writing.Add(1)
	defer c.writing.Add(-1)
	n, err := c.Conn.Write(p)
	if ferr := c.b.flush(); err == nil {
		err = ferr
	}
	return n, err
}

// writeBlock writes a data block whose first header bytes are its
// header (see recordWriter.writeBlock).
func (c *TLSConn) writeBlock(p []byte, header int) (int, error) {
	if w := c.recW.Load(); w != nil {
		return w.writeBlock(p, header)
	}
	return c.Write(p)
}

// recordCloseTimeout bounds the end record's write on Close.
const recordCloseTimeout = 5 * time.Second

// Close breaks a Write in flight instead of queueing the close_notify
// (or the end record) behind it, as tls.Conn.Close does for its own
// writes (a block stuck on a peer that stopped reading would hold Close
// for crypto/tls's 5-second close_notify deadline). Otherwise it stops
// batching, so that the close_notify (or the end record) goes straight
// out, and closes.
func (c *TLSConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if w := c.recW.Load(); w != nil {
		if w.mu.TryLock() {
			c.b.Conn.SetWriteDeadline(time.Now().Add(recordCloseTimeout))
			w.endLocked()
			w.mu.Unlock()
		}
		return c.b.Conn.Close()
	}
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
// KeyUpdate answer); those go out with the next flush. While exact is
// set, its reads never go past the end of the TLS record being read,
// so that crypto/tls holds no bytes that came after the hello's answer
// (data records, once the peer has switched).
type recordBatcher struct {
	net.Conn
	mu sync.Mutex
	w  *bufio.Writer // nil: pass writes through

	exact atomic.Bool
	hdr   [5]byte // TLS record header being read
	nhdr  int
	left  int // bytes of the current record's body not read yet
}

// tlsBatchBytes is the batcher's buffer: a full buffer is written out
// at once, so a 1 MiB block goes out in four writes.
const tlsBatchBytes = 256 << 10

func (b *recordBatcher) Read(p []byte) (int, error) {
	if !b.exact.Load() || len(p) == 0 {
		return b.Conn.Read(p)
	}
	if b.left == 0 {
		n, err := b.Conn.Read(b.hdr[b.nhdr : b.nhdr+min(len(p), len(b.hdr)-b.nhdr)])
		copy(p, b.hdr[b.nhdr:b.nhdr+n])
		b.nhdr += n
		if b.nhdr == len(b.hdr) {
			b.nhdr, b.left = 0, int(binary.BigEndian.Uint16(b.hdr[3:]))
		}
		return n, err
	}
	n, err := b.Conn.Read(p[:min(len(p), b.left)])
	b.left -= n
	return n, err
}

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
