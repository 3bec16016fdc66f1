package control

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"kerf/auth"
	"kerf/datachan"
	"kerf/kermit"
)

// ErrLogin is returned by Dial when the server refuses the login.
var ErrLogin = errors.New("control: login refused")

// ErrCredentials marks an ErrLogin for credentials the server did not
// accept (a wrong password, a key it does not know), not for another
// reason such as a root it cannot open or an address throttled after a
// failure (the credentials were not checked).
var ErrCredentials = errors.New("control: credentials not accepted")

// ErrServerBusy is a dial refused by a kerf server at its session limits
// (its BusyNotice): worth trying again later.
var ErrServerBusy = errors.New("the server is at its session limit (its --max-sessions or --max-sessions-per-addr)")

// ErrDroppedAtLogin is a login whose connection the server (a kerf
// server, its key checked) closed without an answer: one at its overall
// session limit gives the slot of a connection slow to log in to a new
// one, and one stopped or restarted ends every connection. Worth trying
// again, as ErrServerBusy is.
var ErrDroppedAtLogin = errors.New("the server closed the connection before it answered the login (at its session limit it drops connections slow to log in; or it stopped)")

// ErrServerShort marks an ErrLogin refused because the server ran out
// of something a session gives back when it ends (open files): worth
// trying again later, as ErrServerBusy is.
var ErrServerShort = errors.New("control: the server is short of resources")

// ErrServerStopping marks an ErrLogin refused because the server was
// shutting down (a restart, most often): worth trying again once it is
// back, as ErrServerBusy is.
var ErrServerStopping = errors.New("control: the server is shutting down")

// loginRefusal reads as the server's words and is ErrLogin, and
// ErrCredentials too when creds.
type loginRefusal struct {
	msg      string
	creds    bool
	short    bool // ErrServerShort
	stopping bool // ErrServerStopping
}

func (e *loginRefusal) Error() string { return e.msg }
func (e *loginRefusal) Unwrap() []error {
	switch {
	case e.creds:
		return []error{ErrLogin, ErrCredentials}
	case e.short:
		return []error{ErrLogin, ErrServerShort}
	case e.stopping:
		return []error{ErrLogin, ErrServerStopping}
	}
	return []error{ErrLogin}
}

// ClientConfig configures a connection to a kerf (or any Kermit) server.
type ClientConfig struct {
	Addr string // host:port of the control connection
	// DialAddr, if set, is the address connected to instead of Addr's
	// (the one another session of this login reached, so that all reach
	// one machine behind a name with several addresses); the server's
	// key is still checked, and the TLS name still given, as Addr's.
	DialAddr string
	Streams  int // data connections to ask for; 0: AutoStreams
	// Classic speaks plain Kermit, for peers that know no TLS (C-Kermit,
	// or a kerf server run with --allow-classic): no TLS, no data
	// channel. The password, if any, crosses the network in clear.
	Classic bool
	// InBand keeps TLS and the login but opens no data connections: the
	// file data travels in D packets on the control connection, for a
	// path on which only the server's control port is reachable (a port
	// forward, a firewall). Slower than data connections; no --quic,
	// --plain-data, --compress or --streams.
	InBand bool

	// User and Password log in with REMOTE LOGIN. An empty User (or
	// "anonymous") asks for the server's anonymous access. With a
	// ClientCert and an empty Password, a kerf server checks the key
	// instead (public-key login).
	User, Password string
	// AskPassword, if set, gives the password when Password is empty,
	// once the server's key has been checked and just before the login
	// (a prompt: the server's key is asked about first, as ssh does,
	// and an unreachable server is found before anyone types).
	AskPassword func() (string, error)
	// ClientCert, if set, is presented to the server in the TLS
	// handshake when it asks (auth.LoadClientIdentity); it is sent only
	// after the server's key has passed VerifyHost, and never in
	// Classic mode.
	ClientCert *tls.Certificate
	// VerifyHost approves the fingerprint of the key the server presents
	// (auth.KnownHosts.Check); required unless Classic.
	VerifyHost func(addr, fingerprint string) error
	// PlainData asks for plaintext data connections; the server agrees
	// only if it was started with --plain-data.
	PlainData bool
	// Compress asks that data blocks travel compressed (zstd) both ways;
	// the server agrees unless it refuses compression.
	Compress bool
	// Congestion is the TCP congestion control of the data connections
	// (datachan.CongestionControl); "" keeps the system's default.
	Congestion string
	// QUIC asks for the data channel as streams of one QUIC connection
	// (always encrypted; not with PlainData); a server that does not
	// listen for QUIC gets TCP data connections as usual.
	QUIC bool

	Kermit   *kermit.Config
	PathOpts []datachan.Option
	// RateLimit, if set, holds the file data to its rate: the data
	// connections, or in Classic and InBand modes the control
	// connection, which carries the data there. Sessions given one Limiter share it.
	RateLimit *datachan.Limiter
	Log       *slog.Logger
	// IdleTimeout gives up on a server that, while the client waits on
	// it, sends nothing and takes no data for this long (a host frozen
	// or cut off without a reset, which TCP alone waits on for ever):
	// the session fails as if its connection were lost. Zero means
	// DefaultIdleTimeout; negative, wait for ever.
	IdleTimeout time.Duration
	// LoginTimeout bounds the login exchange after the TLS handshake
	// (default DefaultLoginTimeout): a server that took the handshake and
	// then says nothing is given up on, not retried for half an hour.
	LoginTimeout time.Duration
	// ConnectTimeout bounds the making of the control connection (TCP's
	// own handshake): a host that drops the attempts is given up on in
	// this time, not the kernel's minute or two. Zero means
	// DefaultConnectTimeout; negative, the kernel's.
	ConnectTimeout time.Duration
	// HandshakeTimeout bounds the TLS handshake that follows (zero: 15
	// s): a server that takes the connection and never answers.
	HandshakeTimeout time.Duration

	beforeDataDial func(addr string, tok datachan.Token) // tests
}

// Client is one control connection to a server.
type Client struct {
	conn        net.Conn
	sess        *kermit.Session
	dual        *clientDual
	fingerprint string
	stopWatch   context.CancelFunc // the idle watchdog's
}

// DefaultIdleTimeout is ClientConfig.IdleTimeout's default: longer than
// any silence of a working server while a client waits (a batch of
// files synced to a slow disk before a group's end is acknowledged, a
// partial file read for its check, which the engine counts as work),
// shorter than a person's patience.
const DefaultIdleTimeout = 5 * time.Minute

// DefaultConnectTimeout is ClientConfig.ConnectTimeout's default, as
// curl's and ssh's usual settings: a SYN unanswered this long, over any
// path, is a host down or a firewall dropping it.
const DefaultConnectTimeout = 30 * time.Second

// watchedConn is a control connection as an idle watchdog sees it (the
// client's, and the server's): it counts what the peer sends and takes,
// and once the watchdog has given up, a read or write says why.
type watchedConn struct {
	net.Conn
	n       atomic.Int64 // bytes read
	written atomic.Int64 // bytes written
	writing atomic.Int32 // writes under way: a blocked one waits on the server
	why     atomic.Pointer[error]
}

// Write counts what the server took, and a write that blocks (its
// buffers full: a classic session's file data, which goes this way) as
// a wait on it.
func (c *watchedConn) Write(p []byte) (int, error) {
	c.writing.Add(1)
	n, err := c.Conn.Write(p)
	c.writing.Add(-1)
	c.written.Add(int64(n))
	if err != nil {
		if why := c.why.Load(); why != nil {
			err = *why
		}
	}
	return n, err
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	if err != nil {
		if why := c.why.Load(); why != nil {
			err = *why
		}
	}
	return n, err
}

// ErrServerSilent is why a session failed when its server, while the
// client waited on it, sent nothing and took no data for the idle
// timeout.
var ErrServerSilent = errors.New("the server sent nothing and took no data")

// clientHandshakeTimeout bounds the TLS handshake.
var clientHandshakeTimeout = 15 * time.Second

// DefaultLoginTimeout is ClientConfig.LoginTimeout's default: more than
// a server's longest delay of a login after failed ones (auth.Throttle,
// 30 s), which is the slowest a working server answers.
const DefaultLoginTimeout = 60 * time.Second

// maxLoginField bounds user and password together: REMOTE LOGIN travels
// in one short Kermit packet before the packet length is negotiated.
const maxLoginField = 80

// AutoStreams is how many data connections a client asks for over the
// control connection c when not told: 2 where there is more than one
// core, as one connection's receiver reads, checks and writes on one
// core and a second spreads that over two; but 1 to an address of this
// very host, whose two ends share the cores: there a second connection
// only hands blocks between cores on the receiving side (1 GiB on
// loopback, 20 runs alternating: 0.70 s against 0.81 s, server CPU 16%
// less; TLS within noise). See docs/benchmarks.md.
func AutoStreams(c net.Conn) int {
	if runtime.NumCPU() < 2 || datachan.SameHost(c) {
		return 1
	}
	return 2
}

// errLoginTooLong: what REMOTE LOGIN's one packet cannot carry, said
// here rather than refused by the server as a wrong password.
var errLoginTooLong = fmt.Errorf("%w: user name and password are too long for REMOTE LOGIN (at most about %d bytes together)", ErrLogin, maxLoginField)

// Dial connects to a server, checks its key and logs in.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	addr := cfg.Addr
	portGiven := true
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, strconv.Itoa(DefaultPort))
		portGiven = false
	}
	if !cfg.Classic && cfg.VerifyHost == nil {
		return nil, errors.New("control: no way to check the server's key (ClientConfig.VerifyHost)")
	}
	// The control connection's retransmission timeout capped as the
	// data connections' are (datachan.RTOMax): after an outage, a
	// command does not sit out the kernel's two-minute backoff.
	d := net.Dialer{Control: datachan.SocketControl("")}
	to := addr
	if cfg.DialAddr != "" {
		to = cfg.DialAddr
	}
	switch {
	case cfg.ConnectTimeout == 0:
		d.Timeout = DefaultConnectTimeout
	case cfg.ConnectTimeout > 0:
		d.Timeout = cfg.ConnectTimeout
	}
	raw, err := d.DialContext(ctx, "tcp", to)
	if err != nil {
		var dnsErr *net.DNSError
		switch {
		case d.Timeout > 0 && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)):
			// (Go's words: "i/o timeout". The dialer's deadline comes
			// as either, whichever of its context and the socket's
			// deadline fires first: CI met the second.)
			return nil, fmt.Errorf("control: %w: no answer in %v (a host down, or a firewall dropping the connection; --connect-timeout)", err, d.Timeout)
		case errors.Is(err, syscall.ECONNREFUSED) && portGiven:
			return nil, fmt.Errorf("control: %w (nothing listens there: is kerf serve running, on that port? One stopping takes no new sessions while it drains)", err)
		case errors.Is(err, syscall.ECONNREFUSED):
			// (Only when no port was given: it read as if the one given
			// were not used, QA.)
			return nil, fmt.Errorf("control: %w (nothing listens there: is kerf serve running, or stopping? kerf's port is %d unless HOST:PORT says otherwise)", err, DefaultPort)
		case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
			return nil, fmt.Errorf("control: %w (a remote path is HOST[:PORT]/PATH, the host first)", err)
		}
		return nil, fmt.Errorf("control: %w", err)
	}
	tuneControl(raw)
	host, _, _ := net.SplitHostPort(addr)
	cl := &Client{conn: raw}
	// The path's round trip: from the ClientHello to the first bytes of
	// the server's answer (end to end, where a TCP connect may only reach
	// a proxy; the server's part is its key exchange and signature, well
	// under a millisecond, not the whole handshake's crypto, which on a
	// loaded machine took over 5 ms of a loopback handshake).
	var roundTrip time.Duration
	if (cfg.Classic || cfg.InBand) && cfg.RateLimit != nil {
		// The control connection carries the file data: held to the
		// rate on the wire, under TLS where there is TLS.
		cl.conn = datachan.LimitConn(raw, cfg.RateLimit)
	}
	if !cfg.Classic {
		conf := auth.ClientTLS(host, func(fp string) error { return cfg.VerifyHost(addr, fp) })
		if cfg.ClientCert != nil {
			conf.Certificates = []tls.Certificate{*cfg.ClientCert}
		}
		flight := &firstFlight{Conn: cl.conn}
		tc := tls.Client(flight, conf)
		// A plain Kermit peer never answers a ClientHello: give up.
		hsTimeout := clientHandshakeTimeout
		if cfg.HandshakeTimeout > 0 {
			hsTimeout = cfg.HandshakeTimeout
		}
		hctx, cancel := context.WithTimeout(ctx, hsTimeout)
		err := tc.HandshakeContext(hctx)
		roundTrip = flight.roundTrip()
		cancel()
		if err != nil {
			raw.Close()
			if errors.Is(err, auth.ErrHostUnknown) || errors.Is(err, auth.ErrHostKeyChanged) {
				return nil, err
			}
			var rh tls.RecordHeaderError
			if errors.As(err, &rh) && string(rh.RecordHeader[:]) == BusyNotice[:len(rh.RecordHeader)] {
				if words := flight.notice(); words != "" && words+"\r\n" != BusyNotice {
					// Another busy notice (an address refused for a
					// while): the server's words.
					return nil, fmt.Errorf("control: %s: %w", addr, &busyError{words})
				}
				return nil, fmt.Errorf("control: %s: %w", addr, ErrServerBusy)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
				// A kerf server at its session limits says so
				// (BusyNotice, above), but one from before that, or one
				// refusing a flood, closes without a word.
				return nil, fmt.Errorf("control: %s closed the connection during the TLS handshake: a kerf server at its session limit (--max-sessions, --max-sessions-per-addr) may do that, and so does a peer that is not a kerf server (a plain Kermit peer needs --classic): %w", addr, err)
			}
			// The hint only where the peer may not speak TLS at all: it
			// answered something else, or nothing in time. (Not for a
			// local cause: an unreadable known_hosts, an interrupt.)
			if errors.As(err, &rh) {
				return nil, fmt.Errorf("control: TLS handshake with %s: %w (is it a kerf server? a plain Kermit peer needs --classic)", addr, err)
			}
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				// Silence: a plain Kermit peer waits for a packet, but
				// so does a kerf server that is stopped or swamped (QA:
				// only the first was said).
				return nil, fmt.Errorf("control: TLS handshake with %s: no answer in %v: the server is not answering (stopped, overloaded) or is not a kerf server (a plain Kermit peer needs --classic): %w", addr, hsTimeout, err)
			}
			return nil, fmt.Errorf("control: TLS handshake with %s: %w", addr, err)
		}
		cl.conn = tc
		cl.fingerprint = auth.PeerFingerprint(tc.ConnectionState())
	}
	kc := kermit.DefaultConfig()
	if cfg.Kermit != nil {
		kc = *cfg.Kermit
	}
	kc.Streaming = true
	kc.Unprefix = kermit.UnprefixMinimal
	// Only a kerf server speaks TLS on its control port.
	kc.ShortWithoutI = !cfg.Classic
	// A C-Kermit server told SET PARITY answers 7-bit with parity.
	kc.DetectParity = cfg.Classic
	reliableTimers(&kc)
	if cfg.Log != nil {
		kc.Log = cfg.Log
	}
	if !cfg.Classic && !cfg.InBand {
		rhost, _, _ := net.SplitHostPort(raw.RemoteAddr().String())
		pinned := cl.fingerprint
		streams := cfg.Streams
		if streams <= 0 {
			streams = AutoStreams(raw)
		}
		cl.dual = &clientDual{host: rhost, streams: max(1, min(streams, datachan.MaxStreams)), asked: cfg.Streams > 0, plain: cfg.PlainData,
			compress: cfg.Compress, congestion: cfg.Congestion, quic: cfg.QUIC, log: cfg.Log,
			pathOpts: withLimit(cfg.PathOpts, cfg.RateLimit), beforeDial: cfg.beforeDataDial,
			tlsConf: auth.ClientTLS(host, func(fp string) error {
				if fp != pinned {
					return fmt.Errorf("control: data connection presented key %s, not the control connection's %s", fp, pinned)
				}
				return nil
			})}
		kc.Dual = cl.dual
	}
	wc := &watchedConn{Conn: cl.conn}
	cl.conn = wc
	cl.sess = kermit.NewSession(cl.conn, kc)
	cl.sess.NoteRoundTrip(roundTrip)
	if !cfg.Classic || cfg.User != "" {
		var err error
		if cfg.Password == "" && cfg.AskPassword != nil {
			cfg.Password, err = cfg.AskPassword()
		}
		if err == nil && loginLen(cfg.User, cfg.Password) > maxLoginField {
			// Checked once the password is known (it may be typed only
			// now), before the packet that could not carry it.
			err = errLoginTooLong
		}
		if err != nil {
			cl.sess.Close()
			cl.conn.Close()
			return nil, err
		}
		lt := cfg.LoginTimeout
		if lt <= 0 {
			lt = DefaultLoginTimeout
		}
		lctx, cancel := context.WithTimeout(ctx, lt)
		if cfg.Classic {
			_, err = cl.sess.Generic(lctx, 'I', cfg.User, cfg.Password)
		} else {
			// No I exchange first (Kermit's I is optional): the login
			// fits a short packet (maxLoginField), and goes with the TLS
			// handshake's last flight, one round trip sooner. What the
			// session needs to know of the server it learns from the I
			// or S of the command that follows, as before.
			_, err = cl.sess.GenericWithDefaults(lctx, 'I', cfg.User, cfg.Password)
		}
		cancel()
		if err != nil {
			cl.sess.Close()
			cl.conn.Close()
			var pe *kermit.PeerError
			if errors.As(err, &pe) {
				// The server's own words for refused credentials
				// (session.go's errLoginFailed) come back in its E packet.
				return nil, &loginRefusal{msg: ErrLogin.Error() + ": " + pe.Msg,
					creds:    strings.HasPrefix(pe.Msg, errLoginFailed.Error()),
					short:    strings.HasPrefix(pe.Msg, errServerShort.Error()),
					stopping: pe.Msg == kermit.ShuttingDown}
			}
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("control: login: no answer from %s within %v (is it a kerf server?)", addr, lt)
			}
			var le *kermit.LinkError
			if cfg.Classic && errors.As(err, &le) && le.Op == "reading" {
				return nil, fmt.Errorf("control: login: the server closed the connection (a kerf server refuses plain Kermit unless started with --allow-classic; without --classic kerf uses TLS): %w", err)
			}
			if !cfg.Classic && errors.As(err, &le) {
				// A kerf server (its key checked) that ends a login
				// without a word: at its session limit, or stopped.
				return nil, fmt.Errorf("control: login at %s: %w (%w)", addr, ErrDroppedAtLogin, err)
			}
			return nil, fmt.Errorf("control: login: %w", err)
		}
	}
	cl.watchIdle(cfg.IdleTimeout, wc, raw)
	return cl, nil
}

// firstFlight times a TLS client's first flight: from its first write
// (the ClientHello) to the first bytes read back (the server's answer).
// After that it only passes reads and writes through.
type firstFlight struct {
	net.Conn
	done        atomic.Bool
	wrote, read time.Time // set by the handshake's goroutine alone
	head        []byte    // the first bytes read, for a notice in clear
}

// busyError is a kerf server's busy notice other than BusyNotice, in its
// own words: tried again as ErrServerBusy is.
type busyError struct{ words string }

func (e *busyError) Error() string        { return "the server says: " + e.words }
func (e *busyError) Is(target error) bool { return target == ErrServerBusy }

// notice is the first line the server sent, if it came in clear and
// whole ("kerf: busy: ..."), without its line end; "" if not.
func (c *firstFlight) notice() string {
	line, _, ok := bytes.Cut(c.head, []byte("\n"))
	if !ok || !bytes.HasPrefix(line, []byte("kerf: ")) {
		return ""
	}
	line = bytes.TrimSuffix(line, []byte("\r"))
	for _, b := range line {
		if b < ' ' || b > '~' {
			return "" // printable ASCII only: a server's words, not bytes
		}
	}
	return string(line)
}

func (c *firstFlight) Write(b []byte) (int, error) {
	if !c.done.Load() && c.wrote.IsZero() {
		c.wrote = time.Now()
	}
	return c.Conn.Write(b)
}

func (c *firstFlight) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.done.Load() && c.read.IsZero() && !c.wrote.IsZero() {
		c.read = time.Now()
	}
	if n > 0 && !c.done.Load() && len(c.head) < maxNotice {
		c.head = append(c.head, b[:min(n, maxNotice-len(c.head))]...)
	}
	return n, err
}

// maxNotice bounds the first bytes a client keeps for a notice.
const maxNotice = 256

// roundTrip ends the timing (call it once the handshake is over) and
// returns the round trip, 0 if there was none.
func (c *firstFlight) roundTrip() time.Duration {
	c.done.Store(true)
	if c.read.IsZero() {
		return 0
	}
	return c.read.Sub(c.wrote)
}

// watchIdle starts the idle watchdog (ClientConfig.IdleTimeout): while
// the session waits on the server and the server neither sends a byte
// on the control connection nor moves file data for idle, it closes the
// connection (raw, under any TLS), so that the session fails as if it
// were lost, saying why; what it had under way is kept for a resume,
// and with several sessions another takes it over.
func (c *Client) watchIdle(idle time.Duration, wc *watchedConn, raw net.Conn) {
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	if idle < 0 {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	c.stopWatch = stop
	progress := func() int64 { return wc.n.Load() + wc.written.Load() + c.dual.progress() }
	idleFor := func() bool { return c.sess.Busy() || !c.sess.Waiting() && wc.writing.Load() == 0 }
	go watchIdle(ctx, idle, newLiveness(progress, idleFor), func() {
		why := fmt.Errorf("control: %w for %v while this side waited on it (--idle-timeout): given up", ErrServerSilent, idle)
		wc.why.Store(&why)
		raw.Close()
	})
}

// loginLen estimates the encoded length of the REMOTE LOGIN data field.
// LoginFits reports whether user and password go in one REMOTE LOGIN
// (kerf user add and passwd refuse what would never log in).
func LoginFits(user, pass string) bool { return loginLen(user, pass) <= maxLoginField }

func loginLen(user, pass string) int {
	n := 3
	for _, s := range []string{user, pass} {
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c < 32 || c == 127 || c == '#':
				n += 2
			case c >= 128:
				n += 3
			default:
				n++
			}
		}
	}
	return n
}

// RemoteAddr is the address the control connection reached.
func (c *Client) RemoteAddr() net.Addr { return c.conn.RemoteAddr() }

// OnThisHost reports whether the server runs on this host
// (datachan.SameHost of the control connection): it may see the very
// files this side has.
func (c *Client) OnThisHost() bool { return datachan.SameHost(c.conn) }

// Session is the Kermit session on the control connection.
func (c *Client) Session() *kermit.Session { return c.sess }

// Dual reports whether file data goes over data connections.
func (c *Client) Dual() bool { return c.sess.DataPath() != nil }

// DataEncrypted reports whether the data connections are TLS.
func (c *Client) DataEncrypted() bool { return c.dual != nil && c.dual.path != nil && c.dual.encrypted }

// DataCompressed reports whether the data blocks travel compressed
// (asked for with ClientConfig.Compress, and agreed to by the server).
func (c *Client) DataCompressed() bool {
	return c.dual != nil && c.dual.path != nil && c.dual.compressed
}

// DataOverQUIC reports whether the data channel is QUIC streams (asked
// for with ClientConfig.QUIC, and offered by the server).
func (c *Client) DataOverQUIC() bool { return c.dual != nil && c.dual.path != nil && c.dual.overQUIC }

// QUICFallback is why the data channel went to TCP although the server
// offered QUIC (see ClientConfig.QUIC), or nil.
func (c *Client) QUICFallback() error {
	if c.dual == nil {
		return nil
	}
	return c.dual.quicFailed
}

// DataChannel names what carries the file data: "quic", "tls" or "tcp"
// data connections, or "" when it goes in-band (classic Kermit, or no
// data channel was opened).
func (c *Client) DataChannel() string {
	switch {
	case c.dual == nil || c.dual.path == nil:
		return ""
	case c.dual.overQUIC:
		return "quic"
	case c.dual.encrypted:
		return "tls"
	}
	return "tcp"
}

// DataStats returns the data connections' counters (zero without them).
func (c *Client) DataStats() datachan.Stats {
	if c.dual == nil || c.dual.path == nil {
		return datachan.Stats{}
	}
	return c.dual.path.Stats()
}

// Fingerprint is the key fingerprint the server presented ("" without
// TLS).
func (c *Client) Fingerprint() string { return c.fingerprint }

// Send sends files to the server's current directory.
func (c *Client) Send(ctx context.Context, files []kermit.OutgoingFile) error {
	return c.sess.Send(ctx, files)
}

// Get fetches the files matching spec into store.
func (c *Client) Get(ctx context.Context, spec string, recursive bool, store kermit.Store) error {
	return c.sess.Get(ctx, spec, recursive, store)
}

// Generic runs a REMOTE command (see kermit.Session.Generic; over TLS
// REMOTE CD, MKDIR and SET go without an I exchange where they fit,
// kermit.Config.ShortWithoutI).
func (c *Client) Generic(ctx context.Context, cmd byte, args ...string) (string, error) {
	return c.sess.Generic(ctx, cmd, args...)
}

// Close ends the session (BYE) and closes the connections.
func (c *Client) Close() error {
	if c.stopWatch != nil {
		c.stopWatch()
	}
	c.sess.Close()
	if c.dual != nil && c.dual.path != nil {
		c.dual.path.Close()
	}
	return c.conn.Close()
}

// withLimit is opts with l's rate limit, if l is set.
func withLimit(opts []datachan.Option, l *datachan.Limiter) []datachan.Option {
	if l == nil {
		return opts
	}
	return append(slices.Clip(opts), datachan.WithRateLimit(l))
}
