package datachan

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Listener accepts data connections and pairs them with the sessions
// that registered their tokens with Expect. A connection that does not
// pair (garbage, a wrong, expired or replayed token, a wrong source
// address, or silence past the handshake timeout) is closed and disturbs
// nothing else.
//
// An address some token waits for may hold as many connections in their
// hello as its tokens have streams still to come; beyond that, and from
// any other address, connections share a few slots of their own
// (strangerSlots: they are answered, so that an expired or replayed
// token hears why) and are closed at accept when those are taken. So
// strangers cannot fill the handshake slots and starve the sessions'
// own connections.
type Listener struct {
	ln               net.Listener
	tlsConf          *tls.Config
	handshakeTimeout time.Duration
	handshakeSlots   chan struct{} // bounds concurrent handshakes
	strangerSlots    chan struct{} // handshakes beyond what tokens await
	refused          atomic.Int64
	wg               sync.WaitGroup // accept loop and handshakes
	log              *slog.Logger   // nil: says nothing

	mu          sync.Mutex
	closed      bool
	pending     map[Token]*Pending
	handshaking map[net.Conn]struct{}
	hsFrom      map[string]int // connections in their hello, by source address
}

// ListenerOption configures a Listener.
type ListenerOption func(*Listener)

// WithLog has the listener say, at warn, when it cannot accept
// connections (out of open files) and when it can again, as the control
// listener does: a server under a low RLIMIT_NOFILE failed its clients'
// data connections without a word (QA aj).
func WithLog(log *slog.Logger) ListenerOption {
	return func(l *Listener) { l.log = log }
}

// WithHandshakeTimeout sets how long a new connection has to complete the
// TLS handshake (if any) and send its hello. The default is
// DefaultHandshakeTimeout.
func WithHandshakeTimeout(d time.Duration) ListenerOption {
	return func(l *Listener) {
		if d > 0 {
			l.handshakeTimeout = d
		}
	}
}

// WithMaxHandshakes bounds how many connections may be in the hello at
// once; connections beyond that are closed at once. The default is 512
// (each address is bounded by its own tokens too).
func WithMaxHandshakes(n int) ListenerOption {
	return func(l *Listener) {
		if n > 0 {
			l.handshakeSlots = make(chan struct{}, n)
		}
	}
}

// Listen listens on the TCP address addr; see NewListener.
func Listen(addr string, tlsConf *tls.Config, opts ...ListenerOption) (*Listener, error) {
	lc := net.ListenConfig{Control: SocketControl("")}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("datachan: %w", err)
	}
	return NewListener(ln, tlsConf, opts...), nil
}

// NewListener serves data connections accepted from ln, which it owns
// from now on. tlsConf, if not nil, wraps every connection in TLS as a
// server; nil means plain TCP.
func NewListener(ln net.Listener, tlsConf *tls.Config, opts ...ListenerOption) *Listener {
	l := &Listener{
		ln:               ln,
		tlsConf:          OfferRecords(tlsConf),
		handshakeTimeout: DefaultHandshakeTimeout,
		handshakeSlots:   make(chan struct{}, 512),
		strangerSlots:    make(chan struct{}, maxStrangers),
		pending:          make(map[Token]*Pending),
		handshaking:      make(map[net.Conn]struct{}),
		hsFrom:           make(map[string]int),
	}
	for _, o := range opts {
		o(l)
	}
	l.wg.Go(l.acceptLoop)
	return l
}

// Addr is the address clients dial.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Refused counts the connections closed without being paired.
func (l *Listener) Refused() int64 { return l.refused.Load() }

// Close stops accepting, fails every Pending that has not completed and
// closes connections still in their hello. Connections already returned
// by Pending.Wait are the caller's and stay open.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	for _, p := range l.pending {
		l.endLocked(p, ErrListenerClosed, false)
	}
	for c := range l.handshaking {
		c.Close()
	}
	l.mu.Unlock()
	// Not under l.mu: closing a QUIC listener waits for its accept loop,
	// which may be asking Awaits, which takes l.mu.
	err := l.ln.Close()
	l.wg.Wait()
	return err
}

// Pending is a token registered with Expect, waiting for its connections.
type Pending struct {
	l       *Listener
	tok     Token
	from    net.IP
	streams int
	timer   *time.Timer
	done    chan struct{} // closed when complete or ended

	// Guarded by l.mu.
	conns   []net.Conn // by stream index; set when the slot is claimed
	arrived int        // connections answered statusOK
	err     error      // why it ended early
	taken   bool       // Wait returned the connections
}

// Expect registers tok for exactly streams data connections (1 ..
// MaxStreams) coming from the address from, which should be the control
// connection's remote IP; from == nil accepts any address. The token is
// removed once all streams have paired, and fails with ErrPairingExpired
// if that has not happened within ttl. Registering a token that is still
// registered fails with ErrTokenInUse.
func (l *Listener) Expect(tok Token, from net.IP, streams int, ttl time.Duration) *Pending {
	p := &Pending{l: l, tok: tok, from: from, streams: streams, done: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		p.err = ErrListenerClosed
	case streams < 1 || streams > MaxStreams:
		p.err = fmt.Errorf("datachan: expecting %d streams, want 1..%d", streams, MaxStreams)
	case ttl <= 0:
		p.err = fmt.Errorf("datachan: pairing ttl %v", ttl)
	case l.pending[tok] != nil:
		p.err = ErrTokenInUse
	}
	if p.err != nil {
		close(p.done)
		return p
	}
	p.conns = make([]net.Conn, streams)
	l.pending[tok] = p
	p.timer = time.AfterFunc(ttl, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.endLocked(p, ErrPairingExpired, false)
	})
	return p
}

// Wait returns the paired connections in stream order once all have
// arrived. If ctx ends first, the token is withdrawn as by Cancel.
func (p *Pending) Wait(ctx context.Context) ([]net.Conn, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		p.l.mu.Lock()
		p.l.endLocked(p, ctx.Err(), false)
		p.l.mu.Unlock()
	}
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	p.taken = true
	return p.conns, nil
}

// Cancel withdraws the token and closes the connections it paired, unless
// Wait has already returned them.
func (p *Pending) Cancel() {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if !p.taken {
		p.l.endLocked(p, errors.New("datachan: pairing cancelled"), true)
	}
}

// endLocked ends p with err unless it ended already, Wait has returned
// its connections, or (without evenIfComplete) all of them arrived: the
// token is forgotten and its connections closed.
func (l *Listener) endLocked(p *Pending, err error, evenIfComplete bool) {
	if p.err != nil || p.taken || (p.arrived == p.streams && !evenIfComplete) {
		return
	}
	p.err = err
	if l.pending[p.tok] == p {
		delete(l.pending, p.tok)
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	for i, c := range p.conns {
		if c != nil {
			c.Close()
			p.conns[i] = nil
		}
	}
	if p.arrived < p.streams { // a complete Pending's done is closed already
		close(p.done)
	}
}

func (l *Listener) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			l.mu.Lock()
			closed := l.closed
			l.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait and retry.
			if backoff == 0 && l.log != nil {
				l.log.Warn("cannot accept data connections; trying again", "err", err)
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		if backoff > 0 && l.log != nil {
			l.log.Warn("accepting data connections again")
		}
		backoff = 0
		CapRTO(c)
		from := remoteIP(c)
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			return
		}
		slots, awaited := l.strangerSlots, l.hsFrom[from.String()] < l.awaitedLocked(from)
		if awaited {
			slots = l.handshakeSlots
		}
		select {
		case slots <- struct{}{}:
		default:
			l.mu.Unlock()
			l.refused.Add(1)
			c.Close()
			continue
		}
		l.handshaking[c] = struct{}{}
		if awaited {
			l.hsFrom[from.String()]++
		}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.handshake(c, from, awaited)
	}
}

// maxStrangers is how many connections no token awaits may be in their
// hello at once, all addresses together.
const maxStrangers = 16

// remoteIP is the address a connection comes from (a QUIC stream's
// too: QUIC's handshake has proved it), or nil.
func remoteIP(c net.Conn) net.IP {
	switch a := c.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.IP
	case *net.UDPAddr:
		return a.IP
	}
	return nil
}

// awaitedLocked is how many connections the tokens waiting for ip have
// still to see: those of tokens bound to ip, and of tokens that take
// any address.
func (l *Listener) awaitedLocked(ip net.IP) int {
	n := 0
	for _, p := range l.pending {
		if p.err == nil && (p.from == nil || p.from.Equal(ip)) {
			n += p.streams - p.arrived
		}
	}
	return n
}

// Awaits reports whether some token waits for a connection from ip (a
// QUIC listener admits only such peers; see QUICListener.SetAdmit).
func (l *Listener) Awaits(ip net.IP) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.awaitedLocked(ip) > 0
}

// handshake reads the hello on raw and, if it pairs, hands the
// connection to its Pending.
func (l *Listener) handshake(raw net.Conn, remoteIP net.IP, awaited bool) {
	defer l.wg.Done()
	paired := false
	inHello := awaited // counted in hsFrom, until arrive or the end
	counted := &inHello
	defer func() {
		l.mu.Lock()
		delete(l.handshaking, raw)
		l.uncountLocked(remoteIP, counted)
		if awaited {
			<-l.handshakeSlots
		} else {
			<-l.strangerSlots
		}
		l.mu.Unlock()
		if !paired {
			l.refused.Add(1)
			raw.Close()
		}
	}()

	c := raw
	var tc *TLSConn
	if l.tlsConf != nil {
		tc = TLSServer(raw, l.tlsConf)
		c = tc
	}
	c.SetDeadline(time.Now().Add(l.handshakeTimeout))
	var hello [helloLen]byte
	// The magic first, so that a stranger is dropped without waiting.
	if _, err := io.ReadFull(c, hello[:len(helloMagic)]); err != nil || string(hello[:len(helloMagic)]) != helloMagic {
		return
	}
	if _, err := io.ReadFull(c, hello[len(helloMagic):]); err != nil {
		return
	}
	tok, stream, status := parseHello(&hello)
	var p *Pending
	if status == statusOK {
		p, status = l.claim(tok, stream, remoteIP, c)
	}
	if status == statusNoReply {
		return
	}
	if _, err := c.Write([]byte{status}); err != nil || status != statusOK {
		if p != nil {
			l.unclaim(p, stream, c)
		}
		return
	}
	c.SetDeadline(time.Time{})
	if tc != nil {
		if err := tc.Paired(); err != nil {
			l.unclaim(p, stream, c)
			return
		}
	}
	paired = l.arrive(p, raw, c, remoteIP, counted)
	testHookPaired()
}

// uncountLocked takes a connection from ip out of hsFrom if *counted,
// and clears *counted: once its stream has arrived it is no longer in
// its hello, in the same step as its token's arrived count moves (else
// for a moment the token's next stream would be taken for a stranger).
func (l *Listener) uncountLocked(ip net.IP, counted *bool) {
	if !*counted {
		return
	}
	*counted = false
	if k := ip.String(); l.hsFrom[k] <= 1 {
		delete(l.hsFrom, k)
	} else {
		l.hsFrom[k]--
	}
}

// testHookPaired runs after a connection has paired; tests use it to
// widen races.
var testHookPaired = func() {}

// claim reserves stream's slot of tok's Pending for c.
func (l *Listener) claim(tok Token, stream int, ip net.IP, c net.Conn) (*Pending, byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pending[tok]
	switch {
	case p == nil || p.err != nil:
		return nil, statusRefused
	case p.from != nil && !p.from.Equal(ip):
		return nil, statusRefused
	case stream >= p.streams || p.conns[stream] != nil:
		return nil, statusBadStream
	}
	p.conns[stream] = c
	return p, statusOK
}

// unclaim frees a slot whose connection failed before it was answered.
func (l *Listener) unclaim(p *Pending, stream int, c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.err == nil && p.conns[stream] == c {
		p.conns[stream] = nil
	}
}

// arrive counts c (raw, if wrapped in TLS) as paired; the last stream
// completes p. It reports false if p ended meanwhile (c has been closed
// then).
func (l *Listener) arrive(p *Pending, raw, c net.Conn, ip net.IP, counted *bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.err != nil {
		return false
	}
	// No longer the listener's: Close must not close it once Wait may
	// have returned it.
	delete(l.handshaking, raw)
	l.uncountLocked(ip, counted)
	p.arrived++
	if p.arrived == p.streams {
		delete(l.pending, p.tok)
		p.timer.Stop()
		close(p.done)
	}
	return true
}
