package datachan

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"kerf/framing"
)

// protocolError is ErrProtocol's type: its PeerProtocolError method
// tells the engine, which does not import this package, that the peer
// broke the protocol (no reconnecting: a new session would meet it too).
type protocolError struct{ msg string }

func (e *protocolError) Error() string           { return e.msg }
func (e *protocolError) PeerProtocolError() bool { return true }

// damagedStream wraps a protocol error that damage on the way explains as
// well as a peer's breach (a frame header failing its check, on a data
// connection without TLS): a session dialled again may well go on.
type damagedStream struct{ err error }

func (e *damagedStream) Error() string           { return e.err.Error() }
func (e *damagedStream) Unwrap() error           { return e.err }
func (e *damagedStream) PeerProtocolError() bool { return false }

// Errors of a Path. A failed Path returns its first error, wrapped with
// detail, from every later call.
var (
	ErrClosed         = errors.New("datachan: data path closed")
	ErrConnLost       = errors.New("datachan: data connection lost")
	ErrProtocol error = &protocolError{"datachan: protocol error"}
	// ErrDamaging: one block arrived damaged maxDamage times: the path
	// changes what it carries, and asking again will not get it through.
	ErrDamaging = errors.New("datachan: the data path keeps damaging the data")
	// ErrStalled: one connection's data went unacknowledged while the
	// others' was (stallwatch.go). Found on this side, and said to the
	// peer, unlike a connection lost, which the peer may explain.
	ErrStalled = errors.New("datachan: data connection stalled")
)

// Defaults of a Path.
const (
	DefaultBlockSize   = 1 << 20 // 256 KiB cost 10% more time for 1 GiB (docs/benchmarks.md)
	DefaultReadAhead   = 4       // blocks queued beyond those being read and written
	DefaultWriteBehind = 0       // verified blocks queued per connection for a separate disk writer
	DefaultParkLimit   = 32 << 20
	// DefaultParkLimitAll bounds the parked blocks of every Path of the
	// process together (parkedAll): a server's sessions each parking
	// their 32 MiB of blocks for files they never announce held 2.2 GB
	// (QA ah). Past it a block is dropped and asked for again, as past
	// a Path's own limit.
	DefaultParkLimitAll = 256 << 20

	// maxDeferred bounds the blocks of not-yet-expected files a Path
	// remembers to ask for again, and the resend requests queued in
	// either direction; a peer needing more is broken (a sender runs a
	// Kermit window of files ahead, not thousands of blocks).
	maxDeferred = 1 << 16

	// maxDamaged bounds the blocks a Path remembers as damaged and not
	// yet arrived whole (a real path's damage is asked for again and
	// comes whole within a round trip; a peer sending ever new damaged
	// blocks would grow the record for ever).
	maxDamaged = 4096

	// maxGaps bounds the separate ranges of one file received so far
	// (recvFile.got): a sender cuts each range from its start, so a
	// real one leaves a few per connection open (its blocks in flight,
	// and resends). A peer sending every other byte, last first, made
	// each block an insert into an ever longer list under the Path's
	// lock: 60,000 one-byte blocks held it 3 s, 20 MB would have held it
	// minutes (review).
	maxGaps = 4096

	// maxDamage is how many times one block may arrive damaged before the
	// transfer fails (ErrDamaging): occasional damage is asked for again,
	// a path that damages it every time would be asked forever.
	maxDamage = 8
)

// Path implements kermit.DataPath over paired data connections. Either side may
// send and receive; blocks of a file are striped over all connections.
//
// Sending: SendFile cuts the file into blocks (DefaultBlockSize) and
// queues them, at most DefaultReadAhead ahead of the connections' writer
// goroutines; the writer that takes a block reads it, checks it and
// writes header and payload, which sit back to back in one buffer, with
// one Write (one syscall; on TLS, no record of its own for the header),
// so that a block's bytes stay on one goroutine and in one core's cache
// from the file to the socket. A file of one block is read, and if a
// connection is free written, by SendFile's caller. A resend request
// from the peer is served from the src that SendFile was given, until
// Release.
//
// Receiving: a reader goroutine per connection reads and checks blocks; a
// damaged payload is dropped and asked for again on the same connection;
// the reader writes a good block with WriteAt itself (the socket buffer
// keeps receiving meanwhile), or with WithWriteBehind hands it to the
// connection's disk-writer goroutine and goes on reading. A good block
// of a file not expected yet is parked in memory until Expect (up to
// DefaultParkLimit bytes; past that it is dropped and asked for again at
// Expect), so a reader never waits for the engine.
type Path struct {
	cfg      config
	zeroCopy bool // every connection takes sendfile (see zerocopy_linux.go)
	streams  []*stream
	sendq    chan *frame // blocks for any connection
	wg       sync.WaitGroup
	failed   chan struct{} // closed with the first error

	mu      sync.Mutex
	err     error
	sources map[uint32]*source
	files   map[uint32]*recvFile
	// waited are the files whose Wait succeeded, and those abandoned;
	// the next Expect moves those before it into finished, which is all
	// a late copy of their blocks needs, so that a session's bookkeeping
	// of files received does not grow with their number
	// (forgetWaitedLocked).
	waited      []uint32
	finished    idSet
	parked      map[uint32][]early // verified blocks of files not expected yet
	parkedBytes int
	deferred    map[uint32][]early // blocks of files not expected yet, dropped
	nDeferred   int
	damaged     map[blockKey]int       // damaged arrivals of blocks not yet received whole
	resends     []resend               // resend requests from the peer, in order
	resendReady chan struct{}          // capacity 1: resends is not empty
	doomed      map[uint32]*time.Timer // files a block of which could not be read again (doom)
	maxSource   uint32                 // the highest file id registered: those below it not in sources were released
	settled     uint32                 // SettleBelow's: files below it are expected already, or never come
	writesDone  *sync.Cond             // on mu: a file's writer finished its run of blocks

	batchMu                 sync.Mutex // guards the batch of small files' frames
	batch                   []byte
	batchBlocks, batchBytes int64

	stats struct {
		blocksSent, bytesSent, blocksResent      atomic.Int64
		zeroCopyBlocks                           atomic.Int64
		blocksReceived, bytesReceived, badBlocks atomic.Int64
		duplicates, parked, deferred             atomic.Int64
		compressedBlocks                         atomic.Int64
		compressedReceived, wireReceived         atomic.Int64
		zeroBytesSent, zeroBytesReceived         atomic.Int64
		// moving counts bytes as reads return them and as a rate
		// limit lets them go, within blocks: progress for a watchdog
		// on a slow path, where one block takes a long while.
		moving atomic.Int64
	}
}

// Stats are a Path's counters.
type Stats struct {
	BlocksSent     int64 // blocks written to the connections, re-sent ones included
	BytesSent      int64 // payload bytes of those blocks, as sent
	BlocksResent   int64 // blocks sent again because the peer asked
	ZeroCopyBlocks int64 // blocks sent with sendfile, not copied through memory
	BlocksReceived int64 // good blocks accepted (duplicates not counted)
	BytesReceived  int64 // payload bytes of those blocks
	BadBlocks      int64 // blocks dropped for a bad payload check; each was asked for again
	Duplicates     int64 // good blocks ignored because they had arrived before
	Parked         int64 // good blocks held until their file was expected
	Deferred       int64 // good blocks dropped because their file was not expected and the park was full; asked for again at Expect

	CompressedBlocks   int64 // blocks sent compressed (WithCompression); BytesSent counts their compressed size
	CompressedReceived int64 // compressed blocks received and decoded; BytesReceived counts the file bytes
	WireBytesReceived  int64 // payload bytes of good blocks as they arrived (compressed ones at their compressed size), duplicates included

	ZeroBytesSent     int64 // file bytes sent as blocks of zeros, with no payload (a sparse file's holes: WithZeroBlocks)
	ZeroBytesReceived int64 // file bytes received so

	FilesKept int // received files whose record the Path keeps: expected and not yet forgotten (bounded, whatever the files of a session)
}

// Option configures a Path.
type Option func(*config)

type config struct {
	blockSize   int
	readAhead   int
	writeBehind int
	parkLimit   int
	heldGrace   time.Duration // watchHeld's (WithHeldWatch); 0: not watched
	batch       bool
	compress    bool
	zeroBlocks  bool
	stops       bool // WithStops
	limit       *Limiter
	sendfile    Sendfile
	early       bool // WithEarlyPairing
	blockCap    int  // WithBlockSizeCap; 0: none
	recvLimit   int  // WithReceiveLimit; 0: framing.MaxBlockLen
}

// WithBlockSizeCap caps the block size this side sends at n, whatever
// WithBlockSize says: the most the peer said it takes.
func WithBlockSizeCap(n int) Option {
	return func(c *config) { c.blockCap = min(max(n, 1), framing.MaxBlockLen) }
}

// WithReceiveLimit makes a block of more than n file bytes (compressed
// or not) a protocol error: what a receiver's memory per connection is
// sized by, told to the peer so that it sends no bigger
// (WithBlockSizeCap). 0 or more than framing.MaxBlockLen: that.
func WithReceiveLimit(n int) Option {
	return func(c *config) { c.recvLimit = n }
}

// receiveLimit is the largest block this Path takes.
func (c *config) receiveLimit() int {
	if c.recvLimit <= 0 || c.recvLimit > framing.MaxBlockLen {
		return framing.MaxBlockLen
	}
	return c.recvLimit
}

// WithEarlyPairing says the connections come from DialEarly: each
// stream's reader first reads the server's answer to the hello, and a
// refusal fails the Path.
func WithEarlyPairing() Option { return func(c *config) { c.early = true } }

// Sendfile says when blocks go out with sendfile(2) (zerocopy_linux.go).
type Sendfile int

const (
	// SendfileAuto: on plaintext TCP to another host, not on a connection
	// between two addresses of this host (loopback, or its own address).
	// There the receiver copies out of the sender's page-cache pages,
	// cold, instead of out of socket buffers the sender just filled,
	// and the whole transfer costs more: 1 GiB 0.82-0.91 s and 1.32-1.48
	// CPU-s with sendfile, 0.68-0.71 s and 1.17-1.21 CPU-s without
	// (docs/benchmarks.md, nineteenth session).
	SendfileAuto Sendfile = iota
	// SendfileAlways: on every plaintext TCP connection (tests of the
	// sendfile path over loopback).
	SendfileAlways
	// SendfileNever: blocks are always copied.
	SendfileNever
)

// WithSendfile sets when blocks go out with sendfile (default
// SendfileAuto).
func WithSendfile(s Sendfile) Option {
	return func(c *config) { c.sendfile = s }
}

// onSameHost is SameHost (a test has a loopback connection stand for
// one to another host).
var onSameHost = SameHost

// SameHost reports whether c joins two addresses of this host: a
// loopback address, or the host's own address at both ends.
func SameHost(c net.Conn) bool {
	r, ok := c.RemoteAddr().(*net.TCPAddr)
	l, ok2 := c.LocalAddr().(*net.TCPAddr)
	return ok && ok2 && (r.IP.IsLoopback() || r.IP.Equal(l.IP))
}

// WithBlockSize sets the payload size of the blocks this side sends
// (1 .. framing.MaxBlockLen; default DefaultBlockSize), capped by
// WithBlockSizeCap. The receiver takes any size up to its
// WithReceiveLimit (framing.MaxBlockLen if none).
func WithBlockSize(n int) Option {
	return func(c *config) { c.blockSize = min(max(n, 1), framing.MaxBlockLen) }
}

// WithReadAhead sets how many blocks SendFile may have queued beyond
// those the connections are reading and writing (default
// DefaultReadAhead).
func WithReadAhead(blocks int) Option {
	return func(c *config) { c.readAhead = max(blocks, 0) }
}

// WithWriteBehind sets how many verified blocks each connection's reader
// may queue for a separate disk-writer goroutine before it stops reading
// (default DefaultWriteBehind). With 0 the reader calls WriteAt itself:
// while it writes, the socket's receive buffer (megabytes, autotuned)
// keeps the network busy, and a block costs no hand-off between
// goroutines (on loopback onto tmpfs 12% less server CPU than with 4).
// A queue pays for storage whose writes can stall for long.
func WithWriteBehind(blocks int) Option {
	return func(c *config) { c.writeBehind = max(blocks, 0) }
}

// WithParkLimit sets how many bytes of blocks that arrive before their
// file is expected the Path holds in memory (default DefaultParkLimit),
// counted as the buffers that hold them: each payload rounded up to a
// power of two, at least 1 KiB. Blocks beyond that are dropped and asked for again
// once the file is expected.
func WithParkLimit(bytes int) Option {
	return func(c *config) { c.parkLimit = max(bytes, 0) }
}

// WithSmallFileBatching lets SendFile hold back the frames of small
// one-block files until Flush (or until they fill a batch), so that many
// small files travel in one write. The caller must Flush before it waits
// on the peer for those files (kermit does, before its control packets).
// Off by default.
func WithSmallFileBatching(on bool) Option {
	return func(c *config) { c.batch = on }
}

// WithRateLimit holds the Path's connections, reads and writes, to l's
// rate, shared with whatever else l limits (nil: no limit).
func WithRateLimit(l *Limiter) Option {
	return func(c *config) { c.limit = l }
}

// stream is one data connection and its goroutines: a reader, a network
// writer and a disk writer.
type stream struct {
	p    *Path
	idx  int
	conn net.Conn
	raw  syscall.RawConn // conn's socket, for sendfile; nil: not a bare TCP connection
	tls  *TLSConn        // conn as a TLS data connection, if it is one
	// sealed: frames cross an authenticated transport (TLS, data
	// records, QUIC), which damage on the way cannot get a changed
	// frame through: one that does not parse is the peer's.
	sealed bool
	diskq  chan *frame // verified blocks waiting for WriteAt; nil: the reader writes
	// diskMu orders a send to diskq (from the reader, or from Expect
	// delivering parked blocks) with its close as the reader ends:
	// after it, diskClosed, blocks are written by whoever has them.
	diskMu     sync.Mutex
	diskClosed bool

	// Resend requests to send on this connection. A list, not a bounded
	// channel, so that the reader that adds to it never waits for the
	// writer (which may wait for the peer, which may wait for us).
	ctlMu     sync.Mutex
	ctl       []framing.ResendRequest
	ctlSignal chan struct{} // capacity 1: ctl is not empty
	ctlHdr    [framing.FrameLen]byte
	wmu       sync.Mutex // one writer at a time: writeLoop, or SendFile inline

	hdr [framing.BlockHeaderLen]byte // reader's header buffer
	sf  sendfileState                // writer's frame in progress with sendfile

	// The reader's buffer for small frames: after a small block it reads
	// as much as the socket holds, so that a run of small files' blocks
	// costs one read, not two per block (header, payload). After a large
	// block it reads the next header alone and large payloads straight
	// into their own buffers, so big files are not copied twice.
	rbuf         []byte
	rpos, rend   int
	lastBlockBig bool
	in           movingReader // conn, counting (Path.Progress)

	// pairing is closed once the reader has read the server's answer to
	// the hello (WithEarlyPairing; nil: Dial read it), pairingErr then
	// the refusal, if it was one.
	pairing    chan struct{}
	pairingErr error
	pairTLS    *TLSConn // the TLS connection whose reads switch after the answer
}

// smallFrameBuf is the size of a stream's read buffer; payloads of at
// least half of it are read directly.
const smallFrameBuf = 64 << 10

// readFull fills dst from the read buffer and the connection. direct
// asks not to read beyond dst (see stream.rbuf).
func (s *stream) readFull(dst []byte, direct bool) error {
	n := copy(dst, s.rbuf[s.rpos:s.rend])
	s.rpos += n
	rest := dst[n:]
	if len(rest) == 0 {
		return nil
	}
	if direct || len(rest) >= smallFrameBuf/2 {
		_, err := io.ReadFull(&s.in, rest)
		return err
	}
	if s.rbuf == nil {
		s.rbuf = make([]byte, smallFrameBuf)
	}
	m, err := io.ReadAtLeast(&s.in, s.rbuf, len(rest))
	s.rpos, s.rend = copy(rest, s.rbuf[:m]), m
	return err
}

// movingReader counts what each read returns into moving, and tells w
// when it waits and when bytes come (watchHeld).
type movingReader struct {
	r      io.Reader
	moving *atomic.Int64
	w      readWatch
}

func (m *movingReader) Read(p []byte) (int, error) {
	m.w.waiting.Store(monoNow())
	n, err := m.r.Read(p)
	if n > 0 {
		m.w.data.Store(monoNow())
	}
	m.w.waiting.Store(0)
	m.moving.Add(int64(n))
	return n, err
}

// frame is one outgoing or received block; frames are pooled. buf holds
// the header and the payload back to back, so that a block goes out with
// one Write: one syscall on TCP, and on TLS no record of its own for the
// 32-byte header.
type frame struct {
	h       framing.BlockHeader
	buf     []byte // header room, then payload room; reused
	payload []byte // buf[framing.BlockHeaderLen:][:n]
	job     *sendJob
	file    *recvFile

	// unread: a block of job still to be read, the one at srcOff; the
	// writer that takes it reads it (sendJob).
	unread bool

	// A block sent with sendfile carries no payload: its n bytes are
	// read by the kernel from src at srcOff.
	src    *os.File
	srcOff int64
	n      int
}

// size is the number of payload bytes f carries.
func (f *frame) size() int {
	if f.src != nil {
		return f.n
	}
	return len(f.payload)
}

// hdr is the room for the block header in front of the payload.
func (f *frame) hdr() []byte { return f.buf[:framing.BlockHeaderLen] }

// wire is the header and payload as they go on the connection.
func (f *frame) wire() []byte { return f.buf[:framing.BlockHeaderLen+len(f.payload)] }

// write writes f on s's connection, header and payload with one Write
// or, for a sendfile block, the header and then sendfile, and counts
// it. The caller holds s.wmu.
func (s *stream) write(f *frame) error {
	var err error
	if f.src != nil {
		err = s.sendfileFrame(f)
	} else if s.tls != nil {
		_, err = s.tls.writeBlock(f.wire(), framing.BlockHeaderLen)
	} else {
		_, err = s.conn.Write(f.wire())
	}
	if err == nil {
		s.p.stats.blocksSent.Add(1)
		s.p.stats.bytesSent.Add(int64(f.size()))
	}
	return err
}

// NewPath starts a Path over conns, which it owns from now on (Close
// closes them). The order of conns does not matter.
func NewPath(conns []net.Conn, opts ...Option) *Path {
	cfg := config{
		blockSize:   DefaultBlockSize,
		readAhead:   DefaultReadAhead,
		writeBehind: DefaultWriteBehind,
		parkLimit:   DefaultParkLimit,
		heldGrace:   stallGrace(RTOUncapped),
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.blockCap > 0 {
		cfg.blockSize = min(cfg.blockSize, cfg.blockCap)
	}
	p := &Path{
		cfg:      cfg,
		sendq:    make(chan *frame, cfg.readAhead),
		failed:   make(chan struct{}),
		sources:  make(map[uint32]*source),
		files:    make(map[uint32]*recvFile),
		parked:   make(map[uint32][]early),
		deferred: make(map[uint32][]early),

		resendReady: make(chan struct{}, 1),
	}
	p.writesDone = sync.NewCond(&p.mu)
	if len(conns) == 0 {
		p.fail(errors.New("datachan: no data connections"))
		return p
	}
	p.zeroCopy = true
	for i, c := range conns {
		under, _ := c.(*TLSConn) // (the rate limit's wrapper hides it)
		_, overQUIC := c.(*QUICStream)
		sealed := under != nil || overQUIC
		if cfg.limit != nil {
			c = limit(c, cfg.limit, &p.stats.moving)
		}
		s := &stream{
			p:    p,
			idx:  i,
			conn: c,
			raw:  rawSocket(c),

			sealed:    sealed,
			ctlSignal: make(chan struct{}, 1),
		}
		s.tls, _ = c.(*TLSConn)
		s.in = movingReader{r: c, moving: &p.stats.moving}
		if cfg.early {
			s.pairing, s.pairTLS = make(chan struct{}), under
		}
		p.streams = append(p.streams, s)
		p.zeroCopy = p.zeroCopy && s.raw != nil &&
			(cfg.sendfile == SendfileAlways || cfg.sendfile == SendfileAuto && !onSameHost(c))
	}
	p.wg.Go(p.resendLoop)
	if grace, ok := stallWatchable(conns); ok {
		p.wg.Go(func() { p.watchStalls(grace) })
	}
	if len(conns) > 1 && cfg.heldGrace > 0 {
		p.wg.Go(func() { p.watchHeld(cfg.heldGrace) })
	}
	for _, s := range p.streams {
		if cfg.writeBehind > 0 {
			s.diskq = make(chan *frame, cfg.writeBehind) // before the reader, which closes it
			p.wg.Go(s.diskLoop)
		}
		p.wg.Go(s.readLoop)
		p.wg.Go(s.writeLoop)
	}
	return p
}

// Close stops the Path: pending calls fail with ErrClosed (unless the
// Path had failed before), the connections are closed and every
// goroutine has exited when Close returns.
func (p *Path) Close() error {
	p.fail(ErrClosed)
	p.wg.Wait()
	p.mu.Lock()
	unpark(p.parkedBytes) // (the frames go with the Path)
	p.parkedBytes = 0
	clear(p.parked)
	p.mu.Unlock()
	return nil
}

// parkedAll counts the bytes every Path of the process holds parked,
// within parkLimitAll (a variable for tests).
var (
	parkedAll    atomic.Int64
	parkLimitAll int64 = DefaultParkLimitAll
)

// parkRoom takes n bytes of the process's park budget if they fit.
func parkRoom(n int) bool {
	if parkedAll.Add(int64(n)) <= parkLimitAll {
		return true
	}
	parkedAll.Add(-int64(n))
	return false
}

func unpark(n int) { parkedAll.Add(-int64(n)) }

// Progress is a count that grows whenever file data moves either way
// (kermit.DataProgress): payload bytes sent and received, and within a
// block every progressQuantum bytes read or let go.
func (p *Path) Progress() int64 {
	return p.stats.bytesSent.Load() + p.stats.bytesReceived.Load() + p.stats.moving.Load()/progressQuantum
}

// progressQuantum is what moves within a block for the idle watchdogs
// to see progress: a peer trickling a byte a second (a block of 1 MiB
// takes 12 days so) held a session past any idle timeout (QA), while a
// slow path that moves this much within --idle-timeout still counts.
const progressQuantum = 16 << 10

// Stats returns the Path's counters.
func (p *Path) Stats() Stats {
	p.mu.Lock()
	kept := len(p.files)
	p.mu.Unlock()
	return Stats{
		FilesKept:      kept,
		BlocksSent:     p.stats.blocksSent.Load(),
		BytesSent:      p.stats.bytesSent.Load(),
		BlocksResent:   p.stats.blocksResent.Load(),
		ZeroCopyBlocks: p.stats.zeroCopyBlocks.Load(),
		BlocksReceived: p.stats.blocksReceived.Load(),
		BytesReceived:  p.stats.bytesReceived.Load(),
		BadBlocks:      p.stats.badBlocks.Load(),
		Duplicates:     p.stats.duplicates.Load(),
		Parked:         p.stats.parked.Load(),
		Deferred:       p.stats.deferred.Load(),

		CompressedBlocks:   p.stats.compressedBlocks.Load(),
		CompressedReceived: p.stats.compressedReceived.Load(),
		WireBytesReceived:  p.stats.wireReceived.Load(),

		ZeroBytesSent:     p.stats.zeroBytesSent.Load(),
		ZeroBytesReceived: p.stats.zeroBytesReceived.Load(),
	}
}

// RateLimit returns the rate, in bytes per second, that the path's
// connections are held to (WithRateLimit), or 0 (kermit.RateLimited).
func (p *Path) RateLimit() int64 {
	if p.cfg.limit == nil {
		return 0
	}
	return p.cfg.limit.Rate()
}

// Err returns the error the Path failed with, or nil.
func (p *Path) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Failed is closed when the Path fails (kermit.DataFailure).
func (p *Path) Failed() <-chan struct{} { return p.failed }

// LocalFailure is the Path's error if this side found it (damage it
// cannot recover, a protocol error, a write that failed), nil if the
// Path works, was closed, or lost a connection, which the peer may
// explain better (kermit.DataFailure).
func (p *Path) LocalFailure() error {
	err := p.Err()
	if err == nil || errors.Is(err, ErrConnLost) || errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// fail makes err the Path's sticky error, if it has none yet, and closes
// the connections so that every goroutine stops.
func (p *Path) fail(err error) {
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return
	}
	p.err = err
	close(p.failed)
	p.mu.Unlock()
	for _, s := range p.streams {
		s.conn.Close()
	}
}

func (s *stream) lost(err error) error {
	if s.pairing != nil {
		// Written behind the hello: a refused pairing is the cause, not
		// the reset it brings (the answer comes within the hello's
		// deadline, or the connection fails).
		<-s.pairing
		if s.pairingErr != nil {
			return s.pairingErr
		}
	}
	return fmt.Errorf("%w: stream %d (%v): %w", ErrConnLost, s.idx, s.conn.RemoteAddr(), err)
}

// readPairing reads the server's answer to the hello (WithEarlyPairing)
// and then switches a TLS connection's reads to its data records. Only
// the reader calls it, before anything else it reads.
func (s *stream) readPairing() error {
	defer close(s.pairing)
	var status [1]byte
	_, err := io.ReadFull(s.conn, status[:])
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		err = fmt.Errorf("%w: connection closed without an answer (the token unknown, expired or not valid from this address, or the server gone)", ErrRefused)
	case err != nil:
	case status[0] != statusOK:
		err = fmt.Errorf("%w: %s", ErrRefused, statusText(status[0]))
	case s.pairTLS != nil:
		err = s.pairTLS.pairRead()
	}
	if err != nil {
		s.pairingErr = fmt.Errorf("datachan: pairing stream %d with %s: %w", s.idx, s.conn.RemoteAddr(), err)
		return s.pairingErr
	}
	s.conn.SetReadDeadline(time.Time{})
	return nil
}

func (s *stream) protocolError(format string, args ...any) error {
	return fmt.Errorf("%w: stream %d: %s", ErrProtocol, s.idx, fmt.Sprintf(format, args...))
}

// Payload buffers come in power-of-two size classes from minFrameBuf up
// to framing.MaxBlockLen, so that a small block (the only block of a
// small file, say) holds a small buffer: what the park holds, and what it
// counts against its limit, is then close to the payload bytes.
const (
	minFrameBufShift = 10 // 1 KiB
	nFrameClasses    = 24 - minFrameBufShift + 1
)

// framePools hold free frames, by payload buffer size class, for every
// Path of the process: a session's buffers serve the next session. (Per
// Path, each session left its pools' megabytes to the collector, which
// keeps a pool's contents through one more collection, and a busy
// server's heap grew with the number of sessions it had served: 70 MB
// live after 4 sessions of 200 x 4 MiB, 194 MB after 24.)
var framePools [nFrameClasses]sync.Pool // *frame

// frameClass returns the size class of an n-byte payload buffer.
func frameClass(n int) int {
	c := 0
	for n > 1<<(minFrameBufShift+c) {
		c++
	}
	return c
}

// getFrame returns a pooled frame with an n-byte payload (n > 0).
func (p *Path) getFrame(n int) *frame {
	c := frameClass(n)
	if c >= nFrameClasses {
		// Beyond any block (a caller's worst case): not pooled
		// (putFrame drops it, its size being no class's).
		f := &frame{buf: make([]byte, framing.BlockHeaderLen+n)}
		f.payload = f.buf[framing.BlockHeaderLen:]
		return f
	}
	f, _ := framePools[c].Get().(*frame)
	if f == nil {
		f = &frame{buf: make([]byte, framing.BlockHeaderLen+1<<(minFrameBufShift+c))}
	}
	f.payload = f.buf[framing.BlockHeaderLen:][:n]
	return f
}

// payloadCap is the payload room of f's buffer, what the park counts.
func (f *frame) payloadCap() int { return cap(f.buf) - framing.BlockHeaderLen }

func (p *Path) putFrame(f *frame) {
	f.payload, f.job, f.file, f.src, f.unread = nil, nil, nil, nil, false
	n := f.payloadCap()
	c := frameClass(n)
	if n != 1<<(minFrameBufShift+c) {
		return
	}
	framePools[c].Put(f)
}

// readFullAt fills b from src at off; a short file is an error.
func readFullAt(src io.ReaderAt, b []byte, off int64) error {
	_, err := readAt(src, b, off)
	return err
}

// readAt is readFullAt that also returns how much of b it filled (a
// short file's ErrUnexpectedEOF).
func readAt(src io.ReaderAt, b []byte, off int64) (int, error) {
	n, err := src.ReadAt(b, off)
	if n == len(b) {
		return n, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
