// Package control is kerf's dual-channel service: a Kermit session on
// the control connection (the kermit engine, unchanged) plus the data
// connections that carry file bytes. It offers the dual-channel
// extension in the Send-Init exchange; a peer that does not answer it
// (C-Kermit, G-Kermit) gets classic single-channel Kermit, streaming, on
// the same connection.
//
// It is also where the network meets the security layer (see
// docs/security.md): every control and data connection is TLS 1.3
// (sniffed from its first byte on one port; plain Kermit only with
// AllowClassic), a session serves nothing before a REMOTE LOGIN checked
// against package auth (or read-only anonymous access), the user's tree
// is confined by filestore's os.Root, data connections pair with a
// single-use token from the control connection's address, and
// connections are bounded per address, in number and in time.
//
// It does not store credentials or keys (package auth) and does not
// parse packets (package kermit).
package control

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"kerf/datachan"
	"kerf/kermit"
)

// DefaultPort is the IANA port for Kermit.
const DefaultPort = 1649

// Extension field keys (the text after WHATAMI2 in the Send-Init, see
// docs/protocol.md): "N<streams>" from the client; "P<port>;N<streams>;
// T<token>" from the server. A client that wants plaintext data
// connections adds ";X"; the server echoes ";X" only if it allows them
// (--plain-data), and otherwise every data connection is TLS. A client
// that wants compressed data blocks adds ";Z"; the server echoes ";Z" if
// it agrees, and then both ends compress what they send. A client that
// wants the data channel over QUIC adds ";Q"; a server that listens for
// QUIC answers ";Q<udp port>", and the client then opens the streams of
// one QUIC connection there instead of TCP connections to P. A client
// that takes blocks of zeros (a sparse file's holes sent as headers
// alone) adds ";H", and a server that does echoes it; then both send
// them.
func parseExt(ext string) map[byte]string {
	m := map[byte]string{}
	for _, f := range strings.Split(ext, ";") {
		if len(f) >= 1 {
			m[f[0]] = f[1:]
		}
	}
	return m
}

func encodeToken(t datachan.Token) string { return base64.RawURLEncoding.EncodeToString(t[:]) }

func decodeToken(s string) (datachan.Token, error) {
	var t datachan.Token
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(t) {
		return t, fmt.Errorf("control: bad data-channel token in the server's Send-Init")
	}
	copy(t[:], b)
	return t, nil
}

// serverDual answers a client's dual-channel offer with a fresh token.
// It offers nothing until the session has a logged-in (or anonymous)
// user, so that no data connection is paired before authentication.
// livePath is the session's data path, nil if none (or no d).
func (d *serverDual) livePath() *datachan.Path {
	if d == nil {
		return nil
	}
	return d.live.Load()
}

type serverDual struct {
	srv        *Server
	remote     net.IP // nil: any address may pair (--data-from-any-address)
	maxStreams int
	ttl        time.Duration
	allowed    func() bool // the session may open a data channel
	readOnly   func() bool // the session may not send files (parks no blocks)
	pending    *datachan.Pending
	tok        datachan.Token
	plain      bool // the pending token was issued for plaintext
	compress   bool // the offer agreed to compressed data blocks
	zeroBlocks bool // the offer agreed to blocks of zeros
	stops      bool // the offer agreed to stop requests (extStops)
	// peerRTOCapped: the client's data connections retransmit at most
	// datachan.RTOMax apart (extRTOCapped).
	peerRTOCapped bool
	quic          bool // the offer named the QUIC port
	pathOpts      []datachan.Option
	path          *datachan.Path
	encrypted     bool
	records       bool                          // TLS data connections carrying data records
	overQUIC      bool                          // the data connections are QUIC streams
	live          atomic.Pointer[datachan.Path] // path, for the idle watchdog
}

// progress counts the file bytes moved on the data connections (0 for
// a nil d or no path).
func (d *serverDual) progress() int64 {
	if d == nil {
		return 0
	}
	return pathProgress(d.live.Load())
}

func pathProgress(p *datachan.Path) int64 {
	if p == nil {
		return 0
	}
	return p.Progress()
}

// extPlain is the extension field by which a client asks for plaintext
// data connections, and a server agrees; extCompress the same for
// compressed data blocks.
const (
	extPlain    = 'X'
	extCompress = 'Z'
	extQUIC     = 'Q'
	extHoles    = 'H'
	// extRTOCapped: "this side's data connections retransmit at most
	// datachan.RTOMax apart" (the kernel caps it), from either side; a
	// receiver gives a held connection of such a peer a shorter grace
	// (datachan.WithHeldWatch). Each side says its own.
	extRTOCapped = 'R'
	// extMaxBlock: "B<bytes>" from a server, the largest data block it
	// takes; a client sends none bigger. A kerf from before it sends
	// none and ignores it.
	extMaxBlock = 'B'
	// extStops: "I take and send stop requests" (framing.ResendFlagStop),
	// from a client; a server that takes them echoes it. A receiver that
	// cannot write a file (its disk full) then stops its sender on the
	// data path instead of taking the rest of the file across for
	// nothing (datachan.WithStops).
	extStops = 'S'
)

// DefaultMaxBlockSize is what a server takes in a data block unless
// configured (ServerConfig.MaxBlockSize): the default block size, so
// that a session's memory is what the defaults make it (16 sends of
// 8 streams asking for 16 MiB blocks took the server to 636 MB with a
// 4 MiB limit, 190 MB with 1 MiB).
const DefaultMaxBlockSize = datachan.DefaultBlockSize

func (d *serverDual) Offer(peerExt string) string {
	d.withdraw()
	if d.allowed != nil && !d.allowed() {
		return ""
	}
	f := parseExt(peerExt)
	n, _ := strconv.Atoi(f['N'])
	n = max(1, min(n, d.maxStreams))
	_, wantQUIC := f[extQUIC]
	d.quic = wantQUIC && d.srv.ql != nil
	_, wantPlain := f[extPlain]
	// QUIC is encrypted whatever was asked: a client asking for both
	// gets QUIC, and plaintext TCP only from a server without QUIC.
	d.plain = wantPlain && d.srv.cfg.AllowPlainData && !d.quic
	_, wantCompress := f[extCompress]
	d.compress = wantCompress && !d.srv.cfg.RefuseCompression
	_, d.zeroBlocks = f[extHoles]
	_, d.stops = f[extStops]
	_, d.peerRTOCapped = f[extRTOCapped]
	d.tok = datachan.NewToken()
	if d.plain {
		d.srv.plainTokens.Store(d.tok, true)
	}
	d.pending = d.srv.dl.Expect(d.tok, d.remote, n, d.ttl)
	port := d.srv.dl.Addr().(*net.TCPAddr).Port
	ext := fmt.Sprintf("P%d;N%d;T%s", port, n, encodeToken(d.tok))
	if d.plain {
		ext += ";" + string(extPlain)
	}
	if d.compress {
		ext += ";" + string(extCompress)
	}
	if d.zeroBlocks {
		ext += ";" + string(extHoles)
	}
	if d.stops {
		ext += ";" + string(extStops)
	}
	if datachan.RTOCapped() {
		ext += ";" + string(extRTOCapped)
	}
	if d.quic {
		ext += fmt.Sprintf(";%c%d", extQUIC, d.srv.ql.Addr().(*net.UDPAddr).Port)
	}
	ext += fmt.Sprintf(";%c%d", extMaxBlock, d.srv.cfg.MaxBlockSize)
	return ext
}

// Open waits for the client's data connections. With no offer standing
// (the session was not yet allowed a data channel) it opens nothing and
// file data stays in-band for this command.
func (d *serverDual) Open(ctx context.Context, peerExt string) (kermit.DataPath, error) {
	if d.pending == nil {
		return nil, nil
	}
	wctx, cancel := context.WithTimeout(ctx, d.ttl)
	defer cancel()
	conns, err := d.pending.Wait(wctx)
	d.pending = nil
	d.srv.plainTokens.Delete(d.tok)
	if err != nil && ctx.Err() == nil && (errors.Is(err, datachan.ErrPairingExpired) || errors.Is(err, context.DeadlineExceeded)) {
		// Said so that the client, which dialled them, knows them lost.
		return nil, fmt.Errorf("%w (%w)", kermit.ErrDataNotArrived, datachan.ErrPairingExpired)
	}
	if err != nil {
		return nil, err
	}
	conns, allTLS, anyTLS, nQUIC, err := unwrapData(conns)
	switch {
	case err != nil:
	case nQUIC > 0 && nQUIC < len(conns):
		err = fmt.Errorf("control: data connections mix QUIC and TCP")
	case nQUIC > 0:
		allTLS = true // QUIC is TLS 1.3 itself
	case !allTLS && (!d.plain || anyTLS):
		err = fmt.Errorf("control: data connections mix TLS and plaintext, or are plaintext for a TLS-only token")
	}
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return nil, err
	}
	d.encrypted, d.overQUIC = allTLS, nQUIC > 0
	if tc, ok := conns[0].(*datachan.TLSConn); ok {
		d.records = tc.Records()
	}
	opts := append(slices.Clip(d.pathOpts), datachan.WithSmallFileBatching(true), datachan.WithCompression(d.compress), datachan.WithZeroBlocks(d.zeroBlocks), datachan.WithStops(d.stops), heldWatch(nQUIC > 0, d.peerRTOCapped))
	if d.readOnly != nil && d.readOnly() {
		// A session that may not send files announces none: a block
		// before its file is nothing it can use, and is not held (QA
		// ah: anonymous sessions parked 32 MiB each of blocks for files
		// never announced).
		opts = append(opts, datachan.WithParkLimit(0))
	}
	d.path = datachan.NewPath(conns, opts...)
	d.live.Store(d.path)
	return d.path, nil
}

// heldWatch is the Path's watch for a connection the path holds: off
// over QUIC (one flow, with its own idle timeout), and with the grace
// the peer's retransmission timeout asks for.
func heldWatch(quic, peerCapped bool) datachan.Option {
	switch {
	case quic:
		return datachan.WithHeldWatch(0)
	case peerCapped:
		return datachan.WithHeldWatch(datachan.RTOMax)
	}
	return datachan.WithHeldWatch(datachan.RTOUncapped)
}

func (d *serverDual) withdraw() {
	if d.pending != nil {
		d.pending.Cancel()
		d.pending = nil
		d.srv.plainTokens.Delete(d.tok)
	}
}

func (d *serverDual) close() {
	d.withdraw()
	if d.path != nil {
		d.path.Close()
	}
}

// clientDual offers the extension and dials the data connections.
type clientDual struct {
	host       string
	streams    int
	asked      bool        // streams given by the user, not AutoStreams
	plain      bool        // ask for plaintext data connections
	compress   bool        // ask for compressed data blocks
	quic       bool        // ask for the data channel over QUIC
	congestion string      // TCP congestion control of the data connections
	tlsConf    *tls.Config // verifies the server's key against the control connection's
	pathOpts   []datachan.Option
	path       *datachan.Path
	encrypted  bool
	compressed bool                          // the server agreed to compressed data blocks
	overQUIC   bool                          // the data channel is QUIC streams
	live       atomic.Pointer[datachan.Path] // path, for the idle watchdog

	log *slog.Logger // nil: nothing said
	// quicFailed is why QUIC, offered by the server, was given up for
	// TCP (nil if it was not).
	quicFailed error

	beforeDial func(addr string, tok datachan.Token) // tests
}

// quicFallbackAfter is how long a client waits for its QUIC handshake
// before it takes its data streams to the server's TCP data port instead
// (UDP blocked on the way; a server refusing the connection is known at
// once): several round trips of a long path, and well inside the
// server's wait for the data connections (ServerConfig.DataTokenTTL).
const quicFallbackAfter = 4 * time.Second

// progress counts the file bytes moved on the data connections (0 for
// a nil d or no path).
func (d *clientDual) progress() int64 {
	if d == nil {
		return 0
	}
	return pathProgress(d.live.Load())
}

func (d *clientDual) Offer(string) string {
	ext := "N" + strconv.Itoa(d.streams)
	if d.plain {
		ext += ";" + string(extPlain)
	}
	if d.compress {
		ext += ";" + string(extCompress)
	}
	if d.quic {
		ext += ";" + string(extQUIC)
	}
	if datachan.RTOCapped() {
		ext += ";" + string(extRTOCapped)
	}
	return ext + ";" + string(extHoles) + ";" + string(extStops)
}

// fewerStreamsSaid: a server's allowing fewer data connections than
// asked was said (once a process).
var fewerStreamsSaid atomic.Bool

func (d *clientDual) Open(ctx context.Context, peerExt string) (kermit.DataPath, error) {
	if peerExt == "" {
		// Not offered for this command (not logged in yet): in-band.
		return nil, nil
	}
	f := parseExt(peerExt)
	port, err := strconv.Atoi(f['P'])
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("control: bad data port %q in the server's Send-Init", f['P'])
	}
	n, err := strconv.Atoi(f['N'])
	if err != nil || n < 1 || n > min(datachan.MaxStreams, max(1, d.streams)) {
		return nil, fmt.Errorf("control: bad stream count %q in the server's Send-Init", f['N'])
	}
	if n < d.streams && d.asked && d.log != nil && !fewerStreamsSaid.Swap(true) {
		// (QA q: --streams 32 against a server's 8, said nowhere; QA y:
		// said at info, which a client does not print.) Once a process:
		// each session of --sessions N, and each reconnection, is a
		// client of its own (review 50).
		d.log.Warn("the server allows fewer data connections than asked (its --max-streams)", "asked", d.streams, "allowed", n)
	}
	tok, err := decodeToken(f['T'])
	if err != nil {
		return nil, err
	}
	maxBlock := 0
	if mb, ok := f[extMaxBlock]; ok {
		if maxBlock, err = strconv.Atoi(mb); err != nil || maxBlock < 1 {
			return nil, fmt.Errorf("control: bad block size limit %q in the server's Send-Init", mb)
		}
	}
	_, plain := f[extPlain]
	if plain && !d.plain {
		return nil, fmt.Errorf("control: the server asked for plaintext data connections, which this client did not offer")
	}
	conf := d.tlsConf
	if plain {
		conf = nil
	} else if conf == nil {
		return nil, fmt.Errorf("control: no TLS configuration for the data connections")
	}
	addr := net.JoinHostPort(d.host, strconv.Itoa(port))
	if d.beforeDial != nil {
		d.beforeDial(addr, tok)
	}
	_, compress := f[extCompress]
	if compress && !d.compress {
		return nil, fmt.Errorf("control: the server offered compressed data blocks, which this client did not ask for")
	}
	qport, overQUIC := f[extQUIC]
	if overQUIC && !d.quic {
		return nil, fmt.Errorf("control: the server offered QUIC data streams, which this client did not ask for")
	}
	var conns []net.Conn
	if overQUIC {
		if p, perr := strconv.Atoi(qport); perr != nil || p <= 0 || p > 65535 {
			return nil, fmt.Errorf("control: bad QUIC port %q in the server's Send-Init", qport)
		}
		if conf == nil {
			return nil, fmt.Errorf("control: QUIC data streams need TLS, and the server agreed to plaintext")
		}
		conns, err = datachan.DialQUICWithin(ctx, net.JoinHostPort(d.host, qport), tok, n, conf, quicFallbackAfter)
		if err != nil && ctx.Err() == nil && errors.Is(err, datachan.ErrQUICUnreachable) {
			// As curl --http3 does: the transfer goes on, on TLS over
			// TCP, and the user is told why it is not QUIC. The server
			// takes TCP connections for a token it offered QUIC with.
			// Only when no QUIC connection was made: once one was, its
			// streams may have reached the server for the token, and
			// TCP connections beside them would be refused as a mix.
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("datachan: QUIC connection to %s: no answer in %v (UDP blocked on the way, or a path whose MTU is under QUIC's 1,200-byte packets)", net.JoinHostPort(d.host, qport), quicFallbackAfter)
			}
			if d.log != nil {
				d.log.Info("data over TLS on TCP instead of QUIC", "cause", err.Error())
			}
			d.quicFailed = err
			overQUIC = false
			conns, err = dialData(ctx, addr, tok, n, conf, d.congestion)
		}
	} else {
		conns, err = dialData(ctx, addr, tok, n, conf, d.congestion)
	}
	if err != nil {
		return nil, err
	}
	d.overQUIC = overQUIC
	d.encrypted = !plain
	d.compressed = compress
	_, zeroBlocks := f[extHoles]
	_, stops := f[extStops]
	_, peerCapped := f[extRTOCapped]
	opts := append(slices.Clip(d.pathOpts), datachan.WithSmallFileBatching(true), datachan.WithCompression(compress), datachan.WithZeroBlocks(zeroBlocks), datachan.WithStops(stops), heldWatch(overQUIC, peerCapped))
	if maxBlock > 0 {
		opts = append(opts, datachan.WithBlockSizeCap(maxBlock))
	}
	if !overQUIC {
		// (dialData's connections: their answers are read by the Path.)
		opts = append(opts, datachan.WithEarlyPairing())
	}
	d.path = datachan.NewPath(conns, opts...)
	d.live.Store(d.path)
	return d.path, nil
}

// dataDialTimeout bounds the dialling of the data connections: the
// server waits for them 10 s (ServerConfig.DataTokenTTL) and then gives
// the session up, so a port that drops the dial (a firewall) is not
// waited on for the kernel's two minutes of SYNs.
const dataDialTimeout = 15 * time.Second

// dialData dials the TCP data connections, not waiting for the
// server's answers to their hellos (datachan.DialEarly: the first
// blocks, or the next control packet, go a round trip sooner; the Path
// reads the answers). One that cannot reach the server's data port says
// so and what to do: with FTP's passive mode, the classic trouble of a
// second connection.
func dialData(ctx context.Context, addr string, tok datachan.Token, n int, conf *tls.Config, congestion string) ([]net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, dataDialTimeout)
	defer cancel()
	conns, err := datachan.DialEarly(dctx, addr, tok, n, conf, datachan.WithCongestion(congestion))
	if err != nil && ctx.Err() == nil && unreachable(err) {
		return nil, fmt.Errorf("control: data connection to %s: %w (the server's data port cannot be reached from here: a firewall, a port forward of the control port only, or the address its --data-listen gives; --in-band carries the file data on the control connection instead)", addr, err)
	}
	return conns, err
}

// unreachable reports whether a dial failed for want of a path to the
// port (refused, silent, no route), not for what answered there.
func unreachable(err error) bool {
	var ne net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}
