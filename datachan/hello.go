package datachan

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// The hello: the first bytes a client sends on every data connection, and
// the server's one-byte answer. Once the server has answered statusOK the
// connection carries data-channel frames (framing.BlockHeader and
// framing.ResendRequest) in both directions.
//
//	client -> server, 42 bytes:
//	  0-7   "KERFDATA"
//	  8     hello version (1)
//	  9     stream index, 0 .. streams-1 (each index once per token)
//	  10-41 the session Token, 32 raw bytes
//
//	server -> client, 1 byte:
//	  0     ok: the connection is paired
//	  1     refused: token unknown, expired, used up, or not valid from
//	        the client's address
//	  2     refused: unsupported hello version
//	  3     refused: stream index out of range or already used
//
// After a non-zero status, and without any answer when the first 8 bytes
// are not "KERFDATA" or the hello does not arrive within the server's
// handshake timeout, the server closes the connection. With TLS the hello
// is the first application data after the TLS handshake.
const (
	helloMagic   = "KERFDATA"
	helloVersion = 1
	helloLen     = 42

	statusOK         = 0
	statusRefused    = 1
	statusBadVersion = 2
	statusBadStream  = 3
	statusNoReply    = 0xff // internal: close without answering

	// MaxStreams is the most data connections one token can pair.
	MaxStreams = 64
	// DefaultHandshakeTimeout bounds the hello on both sides.
	DefaultHandshakeTimeout = 10 * time.Second
)

// Errors of pairing.
var (
	ErrRefused        = errors.New("datachan: pairing refused")
	ErrPairingExpired = errors.New("datachan: pairing token expired")
	ErrTokenInUse     = errors.New("datachan: pairing token already registered")
	ErrListenerClosed = errors.New("datachan: listener closed")
)

func putHello(b *[helloLen]byte, tok Token, stream int) {
	copy(b[0:8], helloMagic)
	b[8] = helloVersion
	b[9] = byte(stream)
	copy(b[10:42], tok[:])
}

// parseHello decodes a hello. status is statusOK, statusBadVersion, or
// statusNoReply for bytes that are not a hello at all.
func parseHello(b *[helloLen]byte) (tok Token, stream int, status byte) {
	if string(b[0:8]) != helloMagic {
		return Token{}, 0, statusNoReply
	}
	if b[8] != helloVersion {
		return Token{}, 0, statusBadVersion
	}
	copy(tok[:], b[10:42])
	return tok, int(b[9]), statusOK
}

func statusText(s byte) string {
	switch s {
	case statusRefused:
		return "token unknown, expired, used up or not valid from this address"
	case statusBadVersion:
		return "unsupported hello version"
	case statusBadStream:
		return "stream index out of range or already used"
	}
	return fmt.Sprintf("status %d", s)
}

// Dial opens streams data connections to the server's data address addr,
// pairing each with tok, and returns them in stream order. tlsConf, if
// not nil, wraps each connection in TLS (an empty ServerName is taken
// from addr). Either every connection is paired or none is returned.
func Dial(ctx context.Context, addr string, tok Token, streams int, tlsConf *tls.Config, opts ...DialOption) ([]net.Conn, error) {
	return dial(ctx, addr, tok, streams, tlsConf, false, opts)
}

// DialEarly is Dial that does not wait for the server's answers to the
// hellos: it returns once every connection is open (and its TLS
// handshake done) and its hello written, and the Path made of them with
// WithEarlyPairing reads each answer before anything else, while its
// writes go out behind the hellos at once. That is a round trip sooner
// to the first block (or to a control packet the server reads only once
// the connections are paired). A refusal then fails the Path with the
// error Dial would have returned (ErrRefused and the server's reason).
func DialEarly(ctx context.Context, addr string, tok Token, streams int, tlsConf *tls.Config, opts ...DialOption) ([]net.Conn, error) {
	return dial(ctx, addr, tok, streams, tlsConf, true, opts)
}

func dial(ctx context.Context, addr string, tok Token, streams int, tlsConf *tls.Config, early bool, opts []DialOption) ([]net.Conn, error) {
	if streams < 1 || streams > MaxStreams {
		return nil, fmt.Errorf("datachan: %d streams, want 1..%d", streams, MaxStreams)
	}
	tlsConf = OfferRecords(tlsConf) // once, not per connection
	if tlsConf != nil && tlsConf.ServerName == "" && !tlsConf.InsecureSkipVerify {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			tlsConf = tlsConf.Clone()
			tlsConf.ServerName = host
		}
	}
	d := net.Dialer{Control: SocketControl("")}
	for _, o := range opts {
		o(&d)
	}
	return pairAll(streams, func(i int) (net.Conn, error) {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return clientHello(ctx, c, tok, i, tlsConf, early)
	})
}

// pairAll runs open for stream indexes 0..streams-1 at once and returns
// the connections in order, or, if any failed, none (closing those that
// paired) and every error.
func pairAll(streams int, open func(i int) (net.Conn, error)) ([]net.Conn, error) {
	conns := make([]net.Conn, streams)
	errs := make([]error, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() { conns[i], errs[i] = open(i) })
	}
	wg.Wait()
	if err := joinErrs(errs); err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	return conns, nil
}

// joinErrs is errors.Join on one line: the streams' errors, often the
// same, separated by "; " (a message printed to a terminal or in an E
// packet must not break lines).
func joinErrs(errs []error) error {
	var out multiErr
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

type multiErr []error

func (m multiErr) Error() string {
	parts := make([]string, len(m))
	for i, e := range m {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

func (m multiErr) Unwrap() []error { return m }

// A DialOption configures the connections Dial opens.
type DialOption func(*net.Dialer)

// WithCongestion has Dial's connections use the TCP congestion control
// name (see SocketControl); "" keeps the system's default.
func WithCongestion(name string) DialOption {
	return func(d *net.Dialer) { d.Control = SocketControl(name) }
}

// clientHello runs the client side of the hello on c, which it closes on
// failure, and returns the paired connection (the TLS one if tlsConf is
// set). Early, it returns once the hello is written (DialEarly): the
// answer is the first thing the connection's reader reads
// (stream.readPairing), within the hello's deadline.
func clientHello(ctx context.Context, c net.Conn, tok Token, stream int, tlsConf *tls.Config, early bool) (net.Conn, error) {
	fail := func(err error) (net.Conn, error) {
		c.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("datachan: pairing stream %d with %s: %w", stream, c.RemoteAddr(), err)
	}
	deadline := time.Now().Add(DefaultHandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var tc *TLSConn
	if tlsConf != nil {
		tc = TLSClient(c, tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail(err)
		}
		c = tc
	}
	var hello [helloLen]byte
	putHello(&hello, tok, stream)
	if _, err := c.Write(hello[:]); err != nil {
		return fail(err)
	}
	if early {
		if !stop() {
			return fail(ctx.Err())
		}
		c.SetWriteDeadline(time.Time{}) // the read deadline stays, for the answer
		if tc != nil {
			// The server reads its records from the first byte after the
			// hello: this side's writes switch now, its reads after the
			// answer.
			if err := tc.pairWrite(); err != nil {
				return fail(err)
			}
		}
		return c, nil
	}
	var status [1]byte
	if _, err := io.ReadFull(c, status[:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: connection closed without an answer", ErrRefused)
		}
		return fail(err)
	}
	if status[0] != statusOK {
		return fail(fmt.Errorf("%w: %s", ErrRefused, statusText(status[0])))
	}
	if !stop() {
		return fail(ctx.Err())
	}
	c.SetDeadline(time.Time{})
	if tc != nil {
		if err := tc.Paired(); err != nil {
			return fail(err)
		}
	}
	return c, nil
}
