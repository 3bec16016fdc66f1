package control

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"kerf/auth"
	"kerf/datachan"
	"kerf/framing"
	"kerf/kermit"
)

// Authenticator checks a user's name and password (auth.UsersFile).
type Authenticator interface {
	Authenticate(name, password string) (auth.User, error)
}

// KeyAuthenticator is an Authenticator that also knows which client keys
// may log in as a user (auth.UsersFile). With Users of this kind, a TLS
// client that presents a certificate and logs in with an empty password
// is checked by the certificate's key fingerprint.
type KeyAuthenticator interface {
	AuthenticateKey(name, fingerprint string) (auth.User, error)
}

// ServerConfig configures a kerf server.
type ServerConfig struct {
	// Root is the directory of users whose entry names none, and of
	// anonymous access.
	Root string
	// Private are the server's own files and directories (its state
	// directory, its key): a login whose root holds one is refused
	// (PrivateWithin).
	Private []string
	// XferLog, when set, gets one xferlog line per file sent or received.
	XferLog  *XferLog
	Addr     string // control listen address (default ":1649")
	DataAddr string // data listen address (default: control host, any port)
	// MaxStreams is how many data connections a client may open
	// (default 8).
	MaxStreams int
	// MaxBlockSize is the largest data block the server takes (default
	// DefaultMaxBlockSize), told to the client, which sends no bigger: a
	// session's memory for what it receives follows the block size, and
	// a client's --block-size of 16 MiB took 107 MB of the server's per
	// session (QA v).
	MaxBlockSize int

	// Identity is the server's TLS certificate (required): every
	// connection is TLS 1.3 unless AllowClassic lets plain Kermit in.
	Identity *auth.Identity
	// Users are the accounts; nil means none (anonymous only, if on).
	// If they are a KeyAuthenticator too, clients may log in with a key.
	Users Authenticator
	// Anonymous gives sessions that do not log in read-only access to
	// Root. Off by default.
	Anonymous bool
	// AllowClassic serves plain Kermit peers (no TLS, so their password
	// and data cross the network in clear) on the same port.
	AllowClassic bool
	// AllowPlainData lets clients that ask for it (--plain-data) move
	// file data without TLS; the control connection stays encrypted.
	AllowPlainData bool
	// RefuseCompression turns down clients that ask for compressed data
	// blocks (--compress), to spare the server's CPU; their data then
	// travels as it is.
	RefuseCompression bool
	// Congestion is the TCP congestion control of the data connections
	// (datachan.CongestionControl); "" keeps the system's default.
	Congestion string
	// QUIC also listens for data channels over QUIC, on UDP at the data
	// listener's address (its port number too, if that one is free), for
	// clients that ask for it (--quic).
	QUIC bool
	// Sparse leaves holes for runs of zeros in the files clients send
	// (filestore.Dir.Sparse).
	Sparse bool
	// DataFromAnyAddress accepts data connections from an address other
	// than the control connection's (clients behind some NATs).
	DataFromAnyAddress bool
	// DataTokenTTL is how long a data-channel token stays valid
	// (default 10s).
	DataTokenTTL time.Duration

	// IdleTimeout drops a session that says nothing for this long
	// (default 10 minutes).
	IdleTimeout time.Duration
	// TakeOverAfter lets a session take over a partial file that
	// another session holds, when that one has moved nothing for this
	// long (default DefaultTakeOverAfter; negative, never): a client
	// that lost its link and sends again would otherwise be refused
	// "busy" until the old session's idle timeout (filestore.Holder).
	TakeOverAfter time.Duration
	// HandshakeTimeout bounds the time from connect to a successful
	// login (or first command, for anonymous access): a client that
	// connects and says nothing is dropped then (default 10s).
	HandshakeTimeout time.Duration
	// MaxSessions bounds connections overall (default 256), and
	// MaxSessionsPerAddr those from one address (default 16); beyond
	// them a new connection is closed at once.
	MaxSessions        int
	MaxSessionsPerAddr int
	// EvictAfter: at the overall session limit, a connection not logged
	// in for this long gives its slot up to a new one (default
	// DefaultEvictAfter; negative, never): one still in its handshake or
	// login a moment is a client on its way in, not one holding a slot.
	EvictAfter time.Duration
	// NoLoginPenalty is what each connection that ends without logging
	// in (evicted, timed out in its handshake, closed) costs its address
	// (an IPv6 /64): past PenaltyBlock of them, the address's new
	// connections are refused until they have run out, at most
	// PenaltyMax ahead (default DefaultNoLoginPenalty; negative, none).
	// Loopback addresses are not penalized (a server behind a local
	// proxy or tunnel sees all its clients so) unless PenalizeLoopback.
	NoLoginPenalty   time.Duration
	PenalizeLoopback bool
	// MaxLoginAttempts per connection (default 3); then it is closed.
	MaxLoginAttempts int
	// Throttle slows down failed logins per address (default
	// auth.NewThrottle()).
	Throttle *auth.Throttle

	// Kermit holds the protocol preferences; zero means DefaultConfig.
	Kermit   *kermit.Config
	PathOpts []datachan.Option
	// RateLimit, if set, holds the file data of all sessions together
	// to its rate: their data connections, and the control connections
	// of classic sessions, which carry the data there.
	RateLimit *datachan.Limiter
	Log       *slog.Logger

	loseDataConn *connLoss // tests: dataListener.lose
}

// DefaultTakeOverAfter is ServerConfig.TakeOverAfter's default. A live
// session's silence is its link's outage plus the wait for the sender's
// next retransmission after the heal: up to 15 s with kerf's cap
// (datachan.RTOMax), more from a client whose kernel lacks the cap
// (Linux before 6.15: a 27 s outage gave 54 s of silence in a review's
// probe, 41.5 s with the cap). 60 s lets a live kerf session ride out
// outages of about 45 s, and a client run again after its link was cut
// waits a minute at most, not the idle timeout's ten. A live session can
// still be taken over, by a second sender of the same file, when its
// link is down longer than that.
const DefaultTakeOverAfter = 60 * time.Second

// Server accepts control connections and serves each as a Kermit server.
type Server struct {
	cfg     ServerConfig
	tlsConf *tls.Config // control connections (asks for a client key)
	ln      net.Listener
	dl      *datachan.Listener
	ql      *datachan.QUICListener // nil without ServerConfig.QUIC
	wg      sync.WaitGroup

	plainTokens sync.Map // datachan.Token -> true: issued for plaintext

	// moved holds, by user, what their GETs' --remove-source-files
	// removed (*kermit.MovedFiles): shared by the user's sessions (a
	// get with several), and by no other user's (QA ab).
	moved sync.Map

	draining  chan struct{} // closed by Drain
	drainOnce sync.Once

	mu      sync.Mutex
	perAddr map[string]int
	// slots are the connections counted against the limits: those not
	// past their handshake (not logged in) may be evicted for a new one
	// (admit).
	slots map[*connSlot]struct{}
	// evictions and refusals space the warnings of connections admit
	// dropped or refused.
	evictions, refusals, penalized spacedWarning
	// penalties are the addresses whose connections ended without
	// logging in (NoLoginPenalty), at most maxPenalized of them.
	penalties map[string]*penalty
	// refusing counts connections being told BusyNotice.
	refusing atomic.Int32
	// throttled: which throttled logins are logged at warn.
	throttled throttleNotes
	// idleFree gives the memory the sessions used back to the system
	// once none has run for idleFreeAfter (freeMemory): the runtime
	// keeps freed pages for a while, and a server that served a burst
	// of sessions held 100 MB and more idle (QA).
	idleFree   *time.Timer
	freeAfter  time.Duration // idleFreeAfter; tests shorten it
	freeMemory func()        // debug.FreeOSMemory; tests count calls
	// loggedIn counts the sessions that logged in and have not ended:
	// the ones whose end is worth the memory back. A connection that
	// never logs in holds next to nothing, and one left open kept the
	// memory of those before it for its handshake's 10 s, again and
	// again (QA o).
	loggedIn int
}

// idleFreeAfter is how long a server has no session before it gives
// back its freed memory.
const idleFreeAfter = 2 * time.Second

// NewServer opens the control and data listeners.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Identity == nil {
		return nil, errors.New("control: the server needs a TLS identity (ServerConfig.Identity)")
	}
	cfg = withDefaults(cfg)
	s := &Server{cfg: cfg, tlsConf: controlTLS(cfg.Identity), perAddr: map[string]int{}, slots: map[*connSlot]struct{}{}, freeAfter: idleFreeAfter, freeMemory: freeOSMemory, draining: make(chan struct{})}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	daddr := cfg.DataAddr
	if daddr == "" {
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		daddr = net.JoinHostPort(host, "0")
	}
	lc := net.ListenConfig{Control: datachan.SocketControl(cfg.Congestion)}
	dln, err := lc.Listen(context.Background(), "tcp", daddr)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("control: %w", err)
	}
	s.ln = ln
	var data net.Listener = &dataListener{Listener: dln, tlsConf: datachan.OfferRecords(cfg.Identity.ServerTLS()), plainOK: s.plainOK, lose: cfg.loseDataConn}
	if cfg.QUIC {
		// The TCP data port's number on UDP too where it is free, so
		// that one number (and a firewall rule for both protocols)
		// serves; else any.
		ql, err := datachan.ListenQUIC(dln.Addr().String(), cfg.Identity.ServerTLS(), cfg.HandshakeTimeout, cfg.MaxSessions)
		if err != nil {
			host, _, _ := net.SplitHostPort(dln.Addr().String())
			ql, err = datachan.ListenQUIC(net.JoinHostPort(host, "0"), cfg.Identity.ServerTLS(), cfg.HandshakeTimeout, cfg.MaxSessions)
		}
		if err != nil {
			ln.Close()
			dln.Close()
			return nil, fmt.Errorf("control: %w", err)
		}
		if ql.Warning != "" {
			cfg.Log.Warn("QUIC: " + ql.Warning)
		}
		s.ql = ql
		data = datachan.JoinListeners(data, ql)
	}
	s.dl = datachan.NewListener(data, nil, datachan.WithHandshakeTimeout(cfg.HandshakeTimeout), datachan.WithLog(cfg.Log))
	if s.ql != nil {
		// A QUIC connection holds a slot until its first stream, so
		// only peers some session's token awaits may make one.
		s.ql.SetAdmit(s.dl.Awaits, cfg.MaxSessionsPerAddr)
	}
	return s, nil
}

// controlTLS is the control connections' TLS configuration: the
// server's, asking the client for a certificate (public-key login). The
// certificate is neither required nor checked against any CA: TLS
// proves the client holds its key, and the users file says which keys
// may log in as whom. Data connections ask for none; their token binds
// them to the session.
func controlTLS(id *auth.Identity) *tls.Config {
	c := id.ServerTLS()
	c.ClientAuth = tls.RequestClientCert
	return c
}

func (s *Server) plainOK(t datachan.Token) bool {
	_, ok := s.plainTokens.Load(t)
	return ok
}

func withDefaults(cfg ServerConfig) ServerConfig {
	if cfg.Addr == "" {
		cfg.Addr = fmt.Sprintf(":%d", DefaultPort)
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = 8
	}
	cfg.MaxStreams = min(cfg.MaxStreams, datachan.MaxStreams)
	if cfg.EvictAfter == 0 {
		cfg.EvictAfter = DefaultEvictAfter
	}
	if cfg.NoLoginPenalty == 0 {
		cfg.NoLoginPenalty = DefaultNoLoginPenalty
	}
	if cfg.MaxBlockSize <= 0 {
		cfg.MaxBlockSize = DefaultMaxBlockSize
	}
	cfg.MaxBlockSize = min(cfg.MaxBlockSize, framing.MaxBlockLen)
	if cfg.TakeOverAfter == 0 {
		cfg.TakeOverAfter = DefaultTakeOverAfter
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	if cfg.DataTokenTTL <= 0 {
		cfg.DataTokenTTL = 10 * time.Second
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 256
	}
	if cfg.MaxSessionsPerAddr <= 0 {
		cfg.MaxSessionsPerAddr = 16
	}
	if cfg.MaxLoginAttempts <= 0 {
		cfg.MaxLoginAttempts = 3
	}
	if cfg.Throttle == nil {
		cfg.Throttle = auth.NewThrottle()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// Addr is the control listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// DataAddr is the data listener's address.
func (s *Server) DataAddr() net.Addr { return s.dl.Addr() }

// QUICAddr is the UDP address of the QUIC data listener, or nil.
func (s *Server) QUICAddr() net.Addr {
	if s.ql == nil {
		return nil
	}
	return s.ql.Addr()
}

// QUICWarning says why QUIC may be slow here (small UDP buffers), or "".
func (s *Server) QUICWarning() string {
	if s.ql == nil {
		return ""
	}
	return s.ql.Warning
}

// DataListener exposes the data listener (for its refusal counter).
func (s *Server) DataListener() *datachan.Listener { return s.dl }

// Fingerprint is the server's key fingerprint, as clients pin it.
func (s *Server) Fingerprint() string { return s.cfg.Identity.Fingerprint }

// errShuttingDown is why sessions end when the server stops: their
// clients get it in an E packet instead of a connection cut short.
var errShuttingDown = errors.New(kermit.ShuttingDown)

// Serve accepts sessions until ctx ends or Close is called.
func (s *Server) Serve(ctx context.Context) error {
	parent := ctx
	ctx, stop := context.WithCancelCause(context.WithoutCancel(parent))
	defer stop(errShuttingDown)
	go func() {
		select {
		case <-parent.Done():
		case <-ctx.Done():
		}
		if n := s.Sessions(); n > 0 {
			// Said at the default level: an operator stopping the
			// server sees what it cut short.
			s.cfg.Log.Warn("shutting down: ending the sessions under way (their clients are told; partial files are kept for --resume)", "sessions", n)
		}
		stop(errShuttingDown)
		s.ln.Close()
	}()
	var backoff time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				s.wg.Wait()
				return nil
			}
			// Out of file descriptors (EMFILE, ENFILE) and the like:
			// the server stays up and accepts again once they are
			// back, as the data listener does (QA: a flood of
			// connections, no login needed, made it exit).
			if backoff == 0 {
				s.cfg.Log.Warn("cannot accept connections; trying again", "err", err)
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			continue
		}
		if backoff > 0 {
			s.cfg.Log.Warn("accepting connections again")
			backoff = 0
		}
		// A command after an outage need not sit out the kernel's
		// two-minute backoff (datachan.RTOMax), as the client's side.
		datachan.CapRTO(c)
		slot, penalized := s.admit(c)
		switch {
		case penalized > 0:
			// Told busy, as at the limits, and why: a client there
			// tries again, within its --reconnect time.
			s.notePenalized(c)
			s.refuseBusy(c, penaltyNotice(penalized))
			continue
		case slot == nil:
			s.noteRefusal(c)
			s.refuseBusy(c, BusyNotice)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.release(slot)
			s.handle(ctx, c, slot)
		}()
	}
}

// BusyNotice is what a server at its session limits writes, in clear
// before any TLS, on a connection it then closes: a kerf client takes
// it for what it is (ErrServerBusy) rather than a peer that is not kerf,
// and tries again; a person or a classic Kermit reads it as a line.
const BusyNotice = "kerf: busy: at its session limit, try again later\r\n"

// penaltyNotice is the busy notice of an address refused for its
// connections that did not log in (ServerConfig.NoLoginPenalty), for
// left more: a kerf client takes it as it takes BusyNotice and says
// these words (QA x: told "at its session limit", no hint how long).
func penaltyNotice(left time.Duration) string {
	return fmt.Sprintf("kerf: busy: refused for %d s more: connections from your address kept ending without logging in\r\n", int(left.Round(time.Second)/time.Second))
}

// refusingMax bounds the refused connections told BusyNotice at once;
// past it (a flood) they are closed at once, as they all were before.
const refusingMax = 64

// refuseBusy tells c the server is busy and closes it. The client's
// ClientHello is read and dropped first, for up to a second: closing
// with it unread would reset the connection, which may discard the
// notice before the client reads it.
func (s *Server) refuseBusy(c net.Conn, notice string) {
	if s.refusing.Add(1) > refusingMax {
		s.refusing.Add(-1)
		c.Close()
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.refusing.Add(-1)
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		if _, err := io.WriteString(c, notice); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

func addrKey(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		if v4 := t.IP.To4(); v4 != nil && v4.IsLoopback() {
			// Each loopback address its own slots, unlike the login
			// throttle, which counts them as one (auth.HostKey): local
			// clients that pick their address are one user guessing
			// passwords, but sessions from a local proxy's addresses
			// are its users'.
			return v4.String()
		}
		// Per host, as the login throttle counts: an IPv6 host's /64
		// (it had a fresh limit for each address of it).
		return auth.HostKey(t.IP)
	}
	return a.String()
}

// connSlot is one connection counted against the session limits.
type connSlot struct {
	key     string // addrKey of its peer
	conn    net.Conn
	since   time.Time
	settled bool // past its handshake (logged in): never evicted
	evicted bool // its count was given to a newer connection
	welcome bool // it logged in once: its end costs its address nothing
}

// DefaultEvictAfter is ServerConfig.EvictAfter's default: a login on a
// LAN takes tens of milliseconds, one through a slow path or behind
// others' password hashing some hundreds.
const DefaultEvictAfter = time.Second

// admit counts a new connection c against the limits, or returns nil.
// At the overall limit, a connection that has not logged in within
// EvictAfter gives its slot up: from the address holding most such
// connections (not the new one's), the oldest of them. A connection
// that never logs in held its slot for the handshake's 10 s, and 16
// addresses reconnecting every 10 s kept every user of a default server
// out without an account (QA v); now such connections must be opened
// again every second, and a client's lone connection is the last taken.
// One younger is a client on its way in: evicted, it failed where a
// refusal would have had it dial again (the review: 6 of 8 sends at
// once from one host, exit 3). At an address's own limit
// the new connection is refused, as before: taking a slot from its own
// address gains that address nothing, and a client opening more
// sessions than its address may have would only evict its own (said
// "closed during the TLS handshake", not busy).
func (s *Server) admit(c net.Conn) (slot *connSlot, penalized time.Duration) {
	key := addrKey(c.RemoteAddr())
	s.mu.Lock()
	var victim *connSlot
	if left := s.penalizedLocked(key); left > 0 {
		s.mu.Unlock()
		return nil, left
	}
	if s.perAddr[key] >= s.cfg.MaxSessionsPerAddr {
		s.mu.Unlock()
		return nil, 0
	}
	if len(s.slots) >= s.cfg.MaxSessions {
		if victim = s.evictableLocked(key); victim == nil {
			s.mu.Unlock()
			return nil, 0
		}
		s.uncountLocked(victim)
		victim.evicted = true
	}
	slot = &connSlot{key: key, conn: c, since: time.Now()}
	s.slots[slot] = struct{}{}
	s.perAddr[key]++
	s.mu.Unlock()
	if victim != nil {
		s.noteEviction(victim)
		victim.conn.Close()
	}
	return slot, 0
}

// DefaultNoLoginPenalty is ServerConfig.NoLoginPenalty's default, and
// PenaltyBlock and PenaltyMax its bounds, as OpenSSH's
// PerSourcePenalties has them for connections that do not
// authenticate: an address whose connections end without logging in 15
// times in quick succession (a slot-filler reopening them as they are
// evicted, QA v) is refused for as long as it has run up, up to 10
// minutes; a user's few mistakes (a changed host key, a wrong password)
// cost nothing that shows.
const (
	DefaultNoLoginPenalty = time.Second
	PenaltyBlock          = 15 * time.Second
	PenaltyMax            = 10 * time.Minute
)

// maxPenalized bounds the addresses penalties remember: past it, those
// whose penalty has run out are forgotten, and a new one is not taken
// while none has.
const maxPenalized = 65536

// penalty is an address's: what its connections that did not log in
// ran up (until), and whether it is refused until then (blocked, once
// until stood PenaltyBlock ahead).
type penalty struct {
	until   time.Time
	blocked bool
}

// penalizedLocked returns how long key's new connections are refused
// from now (0: they are not), forgetting a penalty run out.
func (s *Server) penalizedLocked(key string) time.Duration {
	p := s.penalties[key]
	if p == nil {
		return 0
	}
	left := time.Until(p.until)
	if left <= 0 {
		delete(s.penalties, key)
		return 0
	}
	if !p.blocked {
		return 0
	}
	return left
}

// penalizeLocked charges key one connection that ended without logging
// in. A blocked address's refused connections are not admitted, so they
// cost nothing more: the block runs out as it was set.
func (s *Server) penalizeLocked(key string) {
	if s.cfg.NoLoginPenalty < 0 {
		return
	}
	now := time.Now()
	p := s.penalties[key]
	if p == nil {
		if len(s.penalties) >= maxPenalized {
			for k, q := range s.penalties {
				if !now.Before(q.until) {
					delete(s.penalties, k)
				}
			}
			if len(s.penalties) >= maxPenalized {
				return
			}
		}
		if s.penalties == nil {
			s.penalties = map[string]*penalty{}
		}
		p = &penalty{}
		s.penalties[key] = p
	}
	if p.until.Before(now) {
		p.until = now
	}
	p.until = p.until.Add(s.cfg.NoLoginPenalty)
	if ahead := p.until.Sub(now); ahead >= PenaltyBlock {
		p.blocked = true
		if ahead > PenaltyMax {
			p.until = now.Add(PenaltyMax)
		}
	}
}

// notePenalized logs a connection refused for its address's penalty,
// at info, and at warn as spacedWarning says.
func (s *Server) notePenalized(c net.Conn) {
	peer := c.RemoteAddr().String()
	// (Per connection at debug: a flood writes thousands a second; QA x.)
	s.cfg.Log.Debug("connection refused: its address's connections have been ending without logging in", "peer", peer)
	s.penalized.count(&s.mu, peer, func(n int, last string) {
		s.cfg.Log.Warn("connections refused from addresses whose connections kept ending without logging in (--no-login-penalty)", "refused", n, "last_peer", last)
	})
}

// noteEviction logs a connection admit dropped, at info, and at warn
// as spacedWarning says.
func (s *Server) noteEviction(victim *connSlot) {
	peer := victim.conn.RemoteAddr().String()
	s.cfg.Log.Info("connection dropped: not logged in, its slot taken by a new connection at the session limit", "peer", peer, "seconds", time.Since(victim.since).Seconds())
	s.evictions.count(&s.mu, peer, func(n int, last string) {
		s.cfg.Log.Warn("at the session limit: connections that had not logged in were dropped to admit new ones (many: a peer holding connections open without logging in)", "dropped", n, "last_peer", last)
	})
}

// noteRefusal logs a connection refused at the session limits, at info,
// and at warn as spacedWarning says.
func (s *Server) noteRefusal(c net.Conn) {
	peer := c.RemoteAddr().String()
	s.cfg.Log.Debug("connection refused: too many sessions", "peer", peer)
	s.refusals.count(&s.mu, peer, func(n int, last string) {
		s.cfg.Log.Warn("connection refused: too many sessions (--max-sessions, --max-sessions-per-addr)", "refused", n, "last_peer", last)
	})
}

// spacedWarning says events at warn at most once in every (default
// spacedWarningEvery), each such line with the count since the last: a
// flood of connections wrote a line each (245 in 30 s of QA v's
// slot-filling script; thousands a second possible). What comes within
// that time is said when it has passed, so that the last of a burst is
// said too (it waited for an event after it, which might never come).
type spacedWarning struct {
	n     int
	last  string // the last event's peer
	noted time.Time
	later *time.Timer // set while events wait to be said
	every time.Duration
}

const spacedWarningEvery = 10 * time.Second

// count counts one event of peer, under mu, and calls say, outside mu,
// with the events to say now, or later once every has passed since the
// last line.
func (w *spacedWarning) count(mu *sync.Mutex, peer string, say func(n int, last string)) {
	mu.Lock()
	w.n++
	w.last = peer
	every := w.every
	if every == 0 {
		every = spacedWarningEvery
	}
	if wait := every - time.Since(w.noted); wait > 0 {
		if w.later == nil {
			w.later = time.AfterFunc(wait, func() {
				mu.Lock()
				n, last := w.n, w.last
				w.noted, w.n, w.later = time.Now(), 0, nil
				mu.Unlock()
				if n > 0 {
					say(n, last)
				}
			})
		}
		mu.Unlock()
		return
	}
	n := w.n
	w.noted, w.n = time.Now(), 0
	mu.Unlock()
	say(n, peer)
}

// evictableLocked picks the connection admit evicts: one not logged in
// for EvictAfter, not of address but (the new connection's), of the
// address with most of them; the oldest. Nil if none.
func (s *Server) evictableLocked(but string) *connSlot {
	if s.cfg.EvictAfter < 0 {
		return nil
	}
	before := time.Now().Add(-s.cfg.EvictAfter)
	evictable := func(sl *connSlot) bool { return !sl.settled && sl.key != but && sl.since.Before(before) }
	pending := map[string]int{}
	for sl := range s.slots {
		if evictable(sl) {
			pending[sl.key]++
		}
	}
	var best *connSlot
	for sl := range s.slots {
		if !evictable(sl) {
			continue
		}
		if best == nil || pending[sl.key] > pending[best.key] || pending[sl.key] == pending[best.key] && sl.since.Before(best.since) {
			best = sl
		}
	}
	return best
}

func (s *Server) uncountLocked(slot *connSlot) {
	delete(s.slots, slot)
	if s.perAddr[slot.key]--; s.perAddr[slot.key] <= 0 {
		delete(s.perAddr, slot.key)
	}
}

func (s *Server) release(slot *connSlot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slot.evicted {
		s.uncountLocked(slot)
	}
	if !slot.welcome && (s.cfg.PenalizeLoopback || !isLoopback(slot.conn.RemoteAddr())) {
		s.penalizeLocked(slot.key)
	}
}

// isLoopback reports whether a is a loopback address (a local proxy's,
// a tunnel's: all its clients').
func isLoopback(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

// settle marks slot past its handshake (logged in), or back before it
// (logged out): only an unsettled one may be evicted.
func (s *Server) settle(slot *connSlot, settled bool) {
	if slot == nil {
		return
	}
	s.mu.Lock()
	slot.settled = settled
	slot.welcome = slot.welcome || settled
	s.mu.Unlock()
}

// sessionLoggedIn counts a session that logged in, until loginEnded.
func (s *Server) sessionLoggedIn() {
	s.mu.Lock()
	s.loggedIn++
	s.mu.Unlock()
}

// loginEnded ends what sessionLoggedIn counted: the last such session
// gone, the memory goes back in freeAfter.
func (s *Server) loginEnded() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loggedIn--; s.loggedIn > 0 {
		return
	}
	if s.idleFree == nil {
		s.idleFree = time.AfterFunc(s.freeAfter, s.freeIfIdle)
	} else {
		s.idleFree.Reset(s.freeAfter)
	}
}

// freeOSMemory collects twice, since what sync.Pools hold (the data
// path's block buffers) outlives one collection, and gives the memory
// freed back to the system.
func freeOSMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// freeIfIdle gives freed memory back to the system if no logged-in
// session runs.
func (s *Server) freeIfIdle() {
	s.mu.Lock()
	idle := s.loggedIn == 0
	s.mu.Unlock()
	if !idle {
		return
	}
	s.freeMemory()
}

// Sessions is the number of connections being served.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.slots)
}

// Drain stops accepting sessions and ends each running one between its
// client's commands (kermit.Config.Drain), for a stop that cuts no
// transfer short: Serve returns once they have all ended, or, if its
// context ends first, ends those left as it does. The data listeners
// stay open for the commands under way.
func (s *Server) Drain() {
	s.drainOnce.Do(func() {
		close(s.draining)
		s.ln.Close()
	})
}

// Close stops accepting; running sessions end when their peers leave.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.dl.Close()
	return err
}

// classicRefusal is the E packet text a plain Kermit peer gets when
// classic mode is off.
const classicRefusal = "kerf: this server requires TLS (use kerf, or ask for --allow-classic)"

// handle sniffs the first byte: TLS, or a classic Kermit peer.
func (s *Server) handle(ctx context.Context, raw net.Conn, slot *connSlot) {
	defer raw.Close()
	log := s.cfg.Log.With("peer", raw.RemoteAddr().String())
	tuneControl(raw)
	raw.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	pc := &peekConn{Conn: raw}
	first, err := pc.peek()
	if err != nil {
		log.Debug("connection closed before its first byte", "err", err)
		return
	}
	if first == tlsRecordHandshake {
		tc := tls.Server(pc, s.tlsConf)
		hctx, cancel := context.WithTimeout(ctx, s.cfg.HandshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			log.Info("TLS handshake failed", "err", err)
			return
		}
		s.serveSession(ctx, tc, raw, slot, true, auth.PeerFingerprint(tc.ConnectionState()), log)
		return
	}
	if !s.cfg.AllowClassic {
		log.Info("classic Kermit peer refused (no TLS)")
		refuseClassic(raw, first, s.cfg.HandshakeTimeout)
		return
	}
	log.Warn("classic Kermit session: its password and file data cross the network in clear")
	// A classic peer (C-Kermit) sends no keepalives: with the capped
	// retransmission timeout this side would give up on its data after
	// about 160 s of outage, where the kernel's own cap lasts 15 minutes.
	datachan.UncapRTO(raw)
	var conn net.Conn = pc
	if s.cfg.RateLimit != nil {
		conn = datachan.LimitConn(pc, s.cfg.RateLimit)
	}
	s.serveSession(ctx, conn, raw, slot, false, "", log)
}

// refuseClassic answers a plain Kermit peer with an E packet and closes
// gently, so that the peer reads the packet rather than a reset. first
// is the byte the peer began with: a peer that begins with text (C-Kermit
// writes "kermit -ir" to start a remote Kermit) is answered only at the
// mark of its first packet, since C-Kermit empties its input before it
// sends that packet, and an E come before was thrown away (QA: its user
// saw a bare failure, never why).
func refuseClassic(raw net.Conn, first byte, wait time.Duration) {
	raw.SetDeadline(time.Now().Add(min(wait, 5*time.Second)))
	var buf [4096]byte
	for seen := 0; first&0x7f != framing.SOH && seen < 1<<12; {
		n, err := raw.Read(buf[:])
		if slices.ContainsFunc(buf[:n], func(b byte) bool { return b&0x7f == framing.SOH }) {
			break
		}
		if err != nil {
			return // gone before a packet: no one to tell
		}
		seen += n
	}
	f := framing.Frame{Mark: framing.SOH, Check: 1}
	pkt, _ := f.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'E', Data: []byte(classicRefusal)})
	raw.Write(append(pkt, '\r'))
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	for total := 0; total < 1<<16; {
		n, err := raw.Read(buf[:])
		total += n
		if err != nil {
			break
		}
	}
}

// serveSession runs the Kermit server on conn (TLS, or the classic
// connection). raw is the TCP connection underneath, whose deadline
// bounds the handshake until the client has logged in. clientKey is the
// fingerprint of the key the TLS client presented, if any.
func (s *Server) serveSession(ctx context.Context, conn, raw net.Conn, slot *connSlot, secure bool, clientKey string, log *slog.Logger) {
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	defer cancel()
	ip := raw.RemoteAddr().(*net.TCPAddr).IP
	fsys := &sessionFS{srv: s, slot: slot, ip: ip, raw: raw, secure: secure, log: log, ctx: ctx, cancel: cancel, cancelCause: cancelCause}
	if secure {
		fsys.clientKey = clientKey
	}
	defer fsys.close()
	kc := kermit.DefaultConfig()
	if s.cfg.Kermit != nil {
		kc = *s.cfg.Kermit
	}
	kc.Streaming = true // TCP is reliable
	reliableTimers(&kc)
	kc.IdleTimeout = s.cfg.IdleTimeout
	kc.Conceal = fsys.rootPath // no user learns where the server keeps their tree
	kc.Drain = s.draining
	kc.Unprefix = kermit.UnprefixMinimal
	// A C-Kermit told SET PARITY sends 7-bit with parity even over TCP.
	kc.DetectParity = !secure
	kc.Log = slog.New(sessionLogHandler{log.Handler(), fsys.userName})
	// The files that failed, named in the session's end line: without
	// --xferlog an operator saw "files_failed=1" and no name (QA as F6:
	// a killed upload's end named no file).
	failed := &failedFiles{}
	kc.Events = failed.note
	if xl := s.cfg.XferLog; xl != nil {
		host := ip.String()
		// What arrived or went of each file under way, so that one cut
		// off is logged with it, not as 0 bytes (progress comes from the
		// data path's goroutines too).
		var mu sync.Mutex
		moved := map[string]int64{}
		began := map[string]time.Time{}
		kc.Events = func(e kermit.Event) {
			failed.note(e)
			mu.Lock()
			switch e.Kind {
			case kermit.FileStart:
				began[e.Name] = time.Now()
				mu.Unlock()
				return
			case kermit.FileProgress:
				moved[e.Name] = e.Bytes - e.Kept // ranges kept did not move
				mu.Unlock()
				return
			case kermit.FileFailed, kermit.FileSkipped:
				if e.Bytes == 0 && e.Kind == kermit.FileFailed {
					// Cut off: what went of it. (A file refused was
					// not taken, whatever of it was on its way: QA,
					// a GET's file a client refused for room was
					// logged with all its bytes.)
					e.Bytes = moved[e.Name]
				}
				if t, ok := began[e.Name]; ok && e.Duration == 0 {
					// A failure carries no time of its own: it was
					// logged as one second (QA).
					e.Duration = time.Since(t)
				}
				delete(moved, e.Name)
				delete(began, e.Name)
			case kermit.FileDone, kermit.FileSaved:
				delete(moved, e.Name)
				delete(began, e.Name)
			}
			mu.Unlock()
			if e.Path == "" && e.Name != "" && !e.Sending && (e.Kind == kermit.FileFailed || e.Kind == kermit.FileSkipped) {
				// A file received that failed before it had a place in
				// the tree: named from the session's directory, as
				// complete ones are from the top, not as the peer's bare
				// name. Not cleaned: a "../" the peer sent stays in
				// the log.
				e.Path = strings.TrimSuffix(fsys.Pwd(), "/") + "/" + e.Name
			}
			user := fsys.userName()
			if auth.IsAnonymous(user) {
				user = "" // access mode a, as the format has it (QA: logged r)
			}
			if err := xl.Record(e, host, user); err != nil {
				log.Warn("xferlog", "err", err)
			}
		}
	}
	var dual *serverDual
	if secure {
		dual = &serverDual{srv: s, maxStreams: s.cfg.MaxStreams, ttl: s.cfg.DataTokenTTL,
			pathOpts: append(withLimit(s.cfg.PathOpts, s.cfg.RateLimit), datachan.WithReceiveLimit(s.cfg.MaxBlockSize)), allowed: fsys.loggedIn, readOnly: fsys.readOnly}
		if !s.cfg.DataFromAnyAddress {
			dual.remote = ip
		}
		defer dual.close()
		kc.Dual = dual
	}
	kc.PeerLocal = datachan.SameHost(conn)
	reads := &watchedConn{Conn: conn}
	sess := kermit.NewSession(reads, kc)
	defer sess.Close()
	idleErr := fmt.Errorf("kerf: the server ends sessions idle for %v", s.cfg.IdleTimeout)
	live := newLiveness(func() int64 { return reads.n.Load() + dual.progress() }, sess.Busy)
	fsys.setLiveness(live)
	go watchIdle(ctx, s.cfg.IdleTimeout, live, func() { cancelCause(idleErr) })
	if users, ok := s.cfg.Users.(AccountLookup); ok {
		go watchAccount(ctx, fsys, users, time.Second)
	}
	// The engine's reader ends with the connection; close it when the
	// session is cancelled (too many failed logins, idle, shutdown),
	// after a moment in which the engine tells the client why (an E
	// packet; see kermit.Session.Serve), unless it is stuck writing.
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(2*time.Second, func() { raw.Close() }) })
	defer stop()
	log.Info("session start", "tls", secure, "client_key", clientKey != "")
	defer func() {
		if fsys.counted {
			s.loginEnded()
		}
	}()
	began := time.Now()
	err := sess.Serve(ctx, fsys)
	if errors.Is(err, context.Canceled) {
		// Why it was cancelled (idle, taken over, shutdown), not that it was.
		if c := context.Cause(ctx); c != nil {
			err = c
		}
	}
	// What the session moved, for an operator without --xferlog (QA:
	// the end said nothing of it).
	attrs := []any{"user", fsys.userName(), "seconds", math.Round(time.Since(began).Seconds()*1000) / 1000}
	attrs = append(attrs, movedAttrs(sess.Stats())...)
	if names := failed.String(); names != "" {
		attrs = append(attrs, "failed", names)
	}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	attrs = append(attrs, "dual", sess.DataPath() != nil,
		"data_tls", dual != nil && dual.encrypted, "data_records", dual != nil && dual.records,
		"data_quic", dual != nil && dual.overQUIC) // (QA ao: a QUIC session read as TLS)
	if p := dual.livePath(); p != nil {
		// Blocks that came before their file was announced: held
		// (parked) or dropped to be asked for again (deferred); many
		// of files never announced are a client to look at (QA ah).
		if st := p.Stats(); st.Parked+st.Deferred > 0 {
			attrs = append(attrs, "early_blocks_parked", st.Parked, "early_blocks_deferred", st.Deferred)
		}
	}
	log.Info("session end", attrs...)
}

// failedFiles names a session's failed files, the first few of them,
// for its end line: Events (note) come from several goroutines.
type failedFiles struct {
	mu    sync.Mutex
	names []string // the first maxFailedNamed, in order
	more  int      // failed past them
}

// maxFailedNamed is how many failed files a session's end line names.
const maxFailedNamed = 5

func (f *failedFiles) note(e kermit.Event) {
	switch {
	case e.Kind == kermit.FileFailed:
		f.mu.Lock()
		if len(f.names) < maxFailedNamed {
			f.names = append(f.names, e.Name)
		} else {
			f.more++
		}
		f.mu.Unlock()
	case e.Kind == kermit.FileDone && e.Again:
		// Whole after all (sent again): no longer failed.
		f.mu.Lock()
		if i := slices.Index(f.names, e.Name); i >= 0 {
			f.names = slices.Delete(f.names, i, i+1)
		} else if f.more > 0 {
			f.more--
		}
		f.mu.Unlock()
	}
}

// String is the names, quoted where a name needs it, and how many more.
func (f *failedFiles) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for i, n := range f.names {
		if i > 0 {
			b.WriteString(", ")
		}
		// Quoted where it could read as two names, or as the count
		// after them, or hides what it is (a control or bidi-override
		// character: review 59b).
		if strings.Contains(n, ", ") || strings.Contains(n, " and ") || strings.ContainsAny(n, "\"\\") || !utf8.ValidString(n) || strings.IndexFunc(n, func(r rune) bool { return !unicode.IsGraphic(r) }) >= 0 {
			n = strconv.Quote(n)
		}
		b.WriteString(n)
	}
	if f.more > 0 {
		fmt.Fprintf(&b, " and %d more", f.more)
	}
	return b.String()
}

// movedAttrs are what st says a session moved, for its end line, the
// directions it moved nothing in left out.
func movedAttrs(st kermit.Stats) []any {
	var a []any
	if st.FilesReceived > 0 || st.BytesReceived > 0 {
		a = append(a, "files_received", st.FilesReceived, "bytes_received", st.BytesReceived)
	}
	if st.FilesSent > 0 || st.BytesSent > 0 {
		a = append(a, "files_sent", st.FilesSent, "bytes_sent", st.BytesSent)
	}
	if st.FilesFailed > 0 {
		a = append(a, "files_failed", st.FilesFailed)
	}
	return a
}

// watchIdle ends a session (cancel) once progress has not moved for
// idle: no byte from the client on the control connection and no file
// data either way on the data connections, and the session not busy
// (busy: one side reading a big partial file for its check, which may
// take longer than idle). The engine's own timers are chosen partly by
// the peer (its Send-Init timeout), so a silent peer is dropped here
// whatever it asked for.
func watchIdle(ctx context.Context, idle time.Duration, live *liveness, cancel func()) {
	// Every second at least: the ticks are also what dates the last
	// progress for liveness.movedAt.
	tick := time.NewTicker(max(min(idle/8, time.Second), time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if now.Sub(live.movedAt(now)) >= idle {
				cancel()
				return
			}
		}
	}
}

// watchAccount ends the session once its login no longer stands
// (sessionFS.accountGone), checking every period: `kerf user rm`, or a
// key or password taken away, reaches the sessions already in, not only
// the next login. A transfer under way stops as a cut one does, its
// partial kept.
func watchAccount(ctx context.Context, f *sessionFS, users AccountLookup, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if why := f.accountGone(users); why != "" {
				f.log.Warn("session ended: the login no longer stands", "user", f.userName(), "why", why)
				f.cancelCause(errors.New(kermit.AccountEndedPrefix + why))
				return
			}
		}
	}
}

// liveness tracks how long a session has been silent: its progress
// counter (bytes from the client, file data either way) unchanged and
// the session not busy. The idle watchdog samples it every second (a
// change is dated by the sample that sees it, so a silence is
// undercounted by up to a second), and another session that wants a
// file this one holds reads it at any moment (filestore.Holder).
type liveness struct {
	progress func() int64
	busy     func() bool
	mu       sync.Mutex
	last     int64
	since    time.Time // when last was first seen (or the session was busy)
}

func newLiveness(progress func() int64, busy func() bool) *liveness {
	return &liveness{progress: progress, busy: busy, last: progress(), since: time.Now()}
}

// movedAt samples the session at now and returns when it was last seen
// to move (or be busy).
func (l *liveness) movedAt(now time.Time) time.Time {
	p, busy := l.progress(), l.busy()
	l.mu.Lock()
	defer l.mu.Unlock()
	if p != l.last || busy {
		l.last, l.since = p, now
	}
	return l.since
}

// tcpMinTimeout is the shortest wait for an answer on a control
// connection before it counts as a timeout. TCP loses nothing, so a
// retransmission could only duplicate: a server command slower than the
// timer (a login verifying an argon2id hash, a listing of a big tree, a
// server stopped a while) would be run twice, and the stale second
// answer taken for the reply to the next command. So nothing is resent
// (kermit.Config.Reliable); timeouts only count towards giving up, and
// silent peers are dropped by the idle watchdog.
const tcpMinTimeout = 20 * time.Second

// reliableTimers sets kc for a TCP control connection.
func reliableTimers(kc *kermit.Config) {
	kc.Timeout = max(kc.Timeout, tcpMinTimeout)
	kc.MinTimeout = max(kc.MinTimeout, tcpMinTimeout)
	kc.Reliable = true
}

// tuneControl turns off Nagle: Kermit's short ACKs must not wait for
// delayed ACKs (the classic Kermit-over-TCP stall).
func tuneControl(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
}

// movedOf is user's record of the files removed after being sent.
func (s *Server) movedOf(user string) *kermit.MovedFiles {
	m, _ := s.moved.LoadOrStore(user, new(kermit.MovedFiles))
	return m.(*kermit.MovedFiles)
}
