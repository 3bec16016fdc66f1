package datachan

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// QUIC carries the data channel as streams of one QUIC connection
// instead of as TCP connections: each stream stands for one data
// connection, begins with the same hello and carries the same frames, so
// pairing (Listener) and transfer (Path) serve both transports alike.
// QUIC brings its own TLS 1.3, so there is no plaintext QUIC and no TLS
// data records; its congestion control is quic-go's (CUBIC), not the
// kernel's. See docs/protocol-datachan.md §6.

// quicALPN is the application protocol both ends name in QUIC's TLS
// handshake (QUIC requires one).
const quicALPN = "kerf-data/1"

// Flow-control windows. quic-go grows a stream's window from the initial
// one as the reader keeps up, up to the maximum: 16 MiB per stream keeps
// a 1 Gbit/s path of 100 ms busy on one stream, and the connection's
// 64 MiB bounds what one session can make its peer buffer.
const (
	quicStreamWindow = 16 << 20
	quicConnWindow   = 64 << 20
	// quicUDPBuffer is the socket buffer asked for (quic-go wants 7 MB
	// to keep up with fast paths; root gets it whatever net.core.rmem_max
	// says).
	quicUDPBuffer = 7 << 20
	// quicIdleTimeout is how long a QUIC connection lasts hearing
	// nothing (quicConfig).
	quicIdleTimeout = 150 * time.Second
)

func quicConfig(handshake time.Duration) *quic.Config {
	return &quic.Config{
		HandshakeIdleTimeout: handshake,
		// A peer stopped for a while (SIGSTOP, a paused VM) or a path
		// that drops everything for a minute must not end the data
		// connections sooner than TCP would: its keepalive gives up 15 s
		// of silence and nine probes 15 s apart after the last traffic,
		// 150 s. No sooner, and no later either: with 10 minutes a UDP
		// flow dropped while the control connection went on waited for
		// the control's idle timeout, 5 minutes (QA ab). Keepalives
		// keep an idle session's connection up.
		MaxIdleTimeout:             quicIdleTimeout,
		KeepAlivePeriod:            15 * time.Second,
		InitialStreamReceiveWindow: 1 << 20,
		MaxStreamReceiveWindow:     quicStreamWindow,
		MaxConnectionReceiveWindow: quicConnWindow,
		MaxIncomingStreams:         MaxStreams,
		MaxIncomingUniStreams:      -1, // none: every stream is a bidirectional data connection
	}
}

// quicTLS returns a clone of conf that names kerf's QUIC protocol.
func quicTLS(conf *tls.Config) *tls.Config {
	c := conf.Clone()
	c.NextProtos = []string{quicALPN}
	c.MinVersion = tls.VersionTLS13
	return c
}

// quieten keeps quic-go from printing on the process's standard logger
// when the UDP socket buffers cannot grow; listenUDP says so itself.
var quieten sync.Once

// listenUDP opens the UDP socket of a QUIC endpoint with large buffers.
// It reports (as warn, not failing) when the kernel grants less than
// quic-go wants: QUIC then still works, more slowly on fast paths.
func listenUDP(addr string) (*net.UDPConn, string, error) {
	quieten.Do(func() { os.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true") })
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, "", err
	}
	uc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, "", err
	}
	var warn string
	if err := setUDPBuffers(uc, quicUDPBuffer); err != nil {
		warn = err.Error()
	}
	return uc, warn, nil
}

// closeTransport closes tr and its socket uc: a Transport given its
// socket does not close it (quic-go closes only one it made itself).
func closeTransport(tr *quic.Transport, uc *net.UDPConn) {
	tr.Close()
	uc.Close()
}

// quicConn counts the streams of one QUIC connection that are in use,
// and closes the connection when the last is closed (and hold has been
// dropped): a Path closes its connections one by one, as with TCP.
type quicConn struct {
	conn *quic.Conn
	refs atomic.Int64
}

func newQUICConn(c *quic.Conn) *quicConn {
	qc := &quicConn{conn: c}
	qc.refs.Store(1) // the hold, dropped by release
	return qc
}

// quicLinger is how long a QUIC connection stays up after its last
// stream closed: closing it sends CONNECTION_CLOSE at once, which drops
// stream data not yet delivered (a refused stream's status byte, a
// stream's end), so the connection first gives them a moment.
const quicLinger = time.Second

func (qc *quicConn) release() {
	if qc.refs.Add(-1) == 0 {
		time.AfterFunc(quicLinger, func() { qc.conn.CloseWithError(0, "") })
	}
}

// QUICStream is one QUIC stream as a net.Conn: one data connection.
type QUICStream struct {
	*quic.Stream
	qc   *quicConn
	once sync.Once
	// wmu is held by Write: quic-go's Close, which sends what is queued
	// and then the stream's end, may not run beside a Write.
	wmu sync.Mutex
}

func (qc *quicConn) stream(s *quic.Stream) *QUICStream {
	qc.refs.Add(1)
	return &QUICStream{Stream: s, qc: qc}
}

// Read reads from the stream; the peer's end of the stream or of the
// connection without an error reads as io.EOF, as a TCP close does.
func (s *QUICStream) Read(b []byte) (int, error) {
	n, err := s.Stream.Read(b)
	return n, quicErr(err)
}

func (s *QUICStream) Write(b []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	n, err := s.Stream.Write(b)
	return n, quicErr(err)
}

// quicErr maps a peer's orderly close (error code 0) to io.EOF.
func quicErr(err error) error {
	if err == nil {
		return nil // every read and write: no errors.As on the hot path
	}
	var se *quic.StreamError
	var ae *quic.ApplicationError
	switch {
	case errors.As(err, &se) && se.Remote && se.ErrorCode == 0,
		errors.As(err, &ae) && ae.Remote && ae.ErrorCode == 0:
		return io.EOF
	}
	return err
}

// Close ends both directions, as closing a socket does, and the
// connection with its last stream. What was written goes out first,
// then the stream's end, as on TCP; a Write still blocked (on a peer
// that stopped reading) is cut off instead, as a reset.
func (s *QUICStream) Close() error {
	s.once.Do(func() {
		if s.wmu.TryLock() {
			s.Stream.Close()
			s.wmu.Unlock()
		} else {
			s.Stream.CancelWrite(0)
		}
		s.Stream.CancelRead(0)
		s.qc.release()
	})
	return nil
}

func (s *QUICStream) LocalAddr() net.Addr  { return s.qc.conn.LocalAddr() }
func (s *QUICStream) RemoteAddr() net.Addr { return s.qc.conn.RemoteAddr() }

// ErrQUICUnreachable marks a DialQUIC that made no QUIC connection (no
// answer, a refused handshake): no stream of the token reached the
// server, so its data connections may still come another way (TCP).
var ErrQUICUnreachable = errors.New("no QUIC connection made")

// DialQUIC is Dial over QUIC: one QUIC connection to the server's UDP
// address addr, with streams streams, each paired with tok. tlsConf is
// required (QUIC is always encrypted); an empty ServerName is taken from
// addr. Either every stream is paired or none is returned.
func DialQUIC(ctx context.Context, addr string, tok Token, streams int, tlsConf *tls.Config) ([]net.Conn, error) {
	return DialQUICWithin(ctx, addr, tok, streams, tlsConf, DefaultHandshakeTimeout)
}

// quicRefused is the application error code a QUICListener closes a
// connection it refuses with, before it reads any of its streams: the
// client may then take its token elsewhere (ErrQUICUnreachable).
const quicRefused quic.ApplicationErrorCode = 2

// DialQUICWithin is DialQUIC whose QUIC handshake must end within
// handshake; pairing the streams then has ctx's time. A connection not
// made in that time, or refused by the server before any stream was
// read, is ErrQUICUnreachable.
func DialQUICWithin(ctx context.Context, addr string, tok Token, streams int, tlsConf *tls.Config, handshake time.Duration) ([]net.Conn, error) {
	if streams < 1 || streams > MaxStreams {
		return nil, fmt.Errorf("datachan: %d streams, want 1..%d", streams, MaxStreams)
	}
	if tlsConf == nil {
		return nil, errors.New("datachan: QUIC needs a TLS configuration")
	}
	conf := quicTLS(tlsConf)
	if conf.ServerName == "" && !conf.InsecureSkipVerify {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			conf.ServerName = host
		}
	}
	uc, warn, err := listenUDP(":0")
	if err != nil {
		return nil, fmt.Errorf("datachan: QUIC: %w", err)
	}
	_ = warn // a client's buffers are the same as ever; the server reports its own
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("datachan: QUIC: %w", err)
	}
	tr := &quic.Transport{Conn: uc}
	hctx, cancel := context.WithTimeout(ctx, handshake)
	defer cancel()
	c, err := tr.Dial(hctx, ra, conf, quicConfig(handshake))
	if err != nil {
		closeTransport(tr, uc)
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		if why, ok := quicRefusal(err); ok {
			// Refused as soon as the handshake ended, before Dial
			// returned.
			return nil, fmt.Errorf("datachan: QUIC connection to %s refused (%s): %w", addr, why, ErrQUICUnreachable)
		}
		return nil, fmt.Errorf("datachan: QUIC connection to %s: %w: %w", addr, ErrQUICUnreachable, err)
	}
	// The transport (and its socket) goes with the connection.
	context.AfterFunc(c.Context(), func() { closeTransport(tr, uc) })
	qc := newQUICConn(c)
	defer qc.release()
	conns, err := pairAll(streams, func(i int) (net.Conn, error) {
		st, err := c.OpenStream()
		if err != nil {
			return nil, fmt.Errorf("datachan: QUIC stream %d: %w", i, err)
		}
		return clientHello(ctx, qc.stream(st), tok, i, nil, false)
	})
	if why, ok := quicRefusal(err); ok {
		return nil, fmt.Errorf("datachan: QUIC connection to %s refused (%s): %w", addr, why, ErrQUICUnreachable)
	}
	return conns, err
}

// quicRefusal reports whether err is a QUICListener's refusal of the
// connection (quicRefused), and its words.
func quicRefusal(err error) (string, bool) {
	var ae *quic.ApplicationError
	if err != nil && errors.As(err, &ae) && ae.Remote && ae.ErrorCode == quicRefused {
		return ae.ErrorMessage, true
	}
	return "", false
}

// QUICListener accepts QUIC connections and hands out every stream their
// clients open as a net.Conn, for a Listener (see JoinListeners) to pair
// like a TCP connection.
type QUICListener struct {
	tr         *quic.Transport
	uc         *net.UDPConn
	ln         *quic.Listener
	handshake  time.Duration
	slots      chan struct{} // bounds live QUIC connections
	admit      atomic.Pointer[func(net.IP) bool]
	mu         sync.Mutex
	perAddr    map[string]int // live connections by source address
	maxPerAddr int            // see SetAdmit
	streams    chan net.Conn
	done       chan struct{}
	closeOnce  sync.Once
	wg         sync.WaitGroup
	// Warning is why the UDP socket buffers are smaller than QUIC wants
	// (fast paths will be slower), or "".
	Warning string
}

// ListenQUIC listens for QUIC on the UDP address addr with the server
// configuration tlsConf. A connection must open its first stream within
// handshake (default DefaultHandshakeTimeout), and is closed once all its
// streams are; at most maxConns connections (default 128) live at once.
func ListenQUIC(addr string, tlsConf *tls.Config, handshake time.Duration, maxConns int) (*QUICListener, error) {
	if handshake <= 0 {
		handshake = DefaultHandshakeTimeout
	}
	if maxConns <= 0 {
		maxConns = 128
	}
	uc, warn, err := listenUDP(addr)
	if err != nil {
		return nil, fmt.Errorf("datachan: QUIC: %w", err)
	}
	tr := &quic.Transport{Conn: uc}
	ln, err := tr.Listen(quicTLS(tlsConf), quicConfig(handshake))
	if err != nil {
		closeTransport(tr, uc)
		return nil, fmt.Errorf("datachan: QUIC: %w", err)
	}
	l := &QUICListener{
		tr: tr, uc: uc, ln: ln, handshake: handshake, Warning: warn,
		slots:   make(chan struct{}, maxConns),
		perAddr: make(map[string]int),
		streams: make(chan net.Conn),
		done:    make(chan struct{}),
	}
	l.wg.Go(l.acceptLoop)
	return l, nil
}

// Addr is the UDP address clients dial.
func (l *QUICListener) Addr() net.Addr { return l.ln.Addr() }

// SetAdmit makes the listener close at once a connection from an address
// admit refuses (a server admits only addresses some data token awaits:
// Listener.Awaits), before it holds a slot, and one from an address that
// has perAddr live already (a client opens one a session: a server's
// sessions per address; 0 for defaultQUICPerAddr).
func (l *QUICListener) SetAdmit(admit func(net.IP) bool, perAddr int) {
	l.mu.Lock()
	l.maxPerAddr = perAddr
	l.mu.Unlock()
	l.admit.Store(&admit)
}

// defaultQUICPerAddr bounds the live QUIC connections from one address
// unless SetAdmit says otherwise.
const defaultQUICPerAddr = 32

// Accept returns the next stream a client opened.
func (l *QUICListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.streams:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and closes the socket, ending every QUIC
// connection on it.
func (l *QUICListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.ln.Close()
		closeTransport(l.tr, l.uc)
	})
	l.wg.Wait()
	return nil
}

func (l *QUICListener) acceptLoop() {
	for {
		c, err := l.ln.Accept(context.Background())
		if err != nil {
			return
		}
		var ip net.IP
		if a, ok := c.RemoteAddr().(*net.UDPAddr); ok {
			ip = a.IP
		}
		if admit := l.admit.Load(); admit != nil && !(*admit)(ip) {
			c.CloseWithError(quicRefused, "no data connection expected from this address")
			continue
		}
		key := ip.String()
		l.mu.Lock()
		limit := l.maxPerAddr
		if limit <= 0 {
			limit = defaultQUICPerAddr
		}
		if l.perAddr[key] >= limit {
			l.mu.Unlock()
			c.CloseWithError(quicRefused, "busy")
			continue
		}
		select {
		case l.slots <- struct{}{}:
		default:
			l.mu.Unlock()
			c.CloseWithError(quicRefused, "busy")
			continue
		}
		l.perAddr[key]++
		l.mu.Unlock()
		l.wg.Go(func() {
			defer func() {
				l.mu.Lock()
				if l.perAddr[key]--; l.perAddr[key] <= 0 {
					delete(l.perAddr, key)
				}
				l.mu.Unlock()
				<-l.slots
			}()
			l.serveConn(c)
		})
	}
}

// serveConn hands out c's streams until c ends. c is held open for the
// handshake time, so that its first streams can arrive; after that it
// lives as long as one of its streams is in use.
func (l *QUICListener) serveConn(c *quic.Conn) {
	qc := newQUICConn(c)
	hold := time.AfterFunc(l.handshake, qc.release)
	defer func() {
		if hold.Stop() {
			qc.release()
		}
	}()
	for {
		st, err := c.AcceptStream(c.Context())
		if err != nil {
			return
		}
		s := qc.stream(st)
		select {
		case l.streams <- s:
		case <-l.done:
			s.Close()
			return
		}
	}
}

// JoinListeners accepts from all of lns as one listener (a server's TCP
// data listener and its QUIC one, for one Listener and its tokens).
// Addr is the first's; Close closes all.
func JoinListeners(lns ...net.Listener) net.Listener {
	j := &joined{lns: lns, conns: make(chan net.Conn), done: make(chan struct{})}
	for _, ln := range lns {
		j.wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					select {
					case <-j.done:
						return
					default:
					}
					if errors.Is(err, net.ErrClosed) {
						return
					}
					select { // a passing failure: the Listener backs off and retries
					case j.conns <- nil:
						continue
					case <-j.done:
						return
					}
				}
				select {
				case j.conns <- c:
				case <-j.done:
					c.Close()
					return
				}
			}
		})
	}
	return j
}

type joined struct {
	lns       []net.Listener
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

func (j *joined) Accept() (net.Conn, error) {
	for {
		select {
		case c := <-j.conns:
			if c == nil {
				return nil, errors.New("datachan: accept failed")
			}
			return c, nil
		case <-j.done:
			return nil, net.ErrClosed
		}
	}
}

func (j *joined) Close() error {
	var err error
	j.closeOnce.Do(func() {
		close(j.done)
		for _, ln := range j.lns {
			err = errors.Join(err, ln.Close())
		}
	})
	j.wg.Wait()
	return err
}

func (j *joined) Addr() net.Addr { return j.lns[0].Addr() }
