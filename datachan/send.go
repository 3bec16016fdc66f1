package datachan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"kerf/framing"
)

// source is a file being sent, kept for resend requests until Release.
type source struct {
	src    io.ReaderAt
	ranges [][2]int64 // [off, end) passed to SendFile
	// stopped: the peer asked for nothing more of the file (WithStops).
	stopped atomic.Bool
}

// sendJob is one SendFile of several blocks. SendFile queues the blocks
// unread; the connection's writer that takes one reads it, checks it and
// writes it, so that its bytes go from the file to the socket on one
// goroutine, through one cache: handed from a reading goroutine to a
// writing one, every block crossed cores (1 GiB to a server on the same
// two-core host: 13% more CPU on the sending side; docs/benchmarks.md).
type sendJob struct {
	pending atomic.Int64 // blocks queued or being written, +1 while SendFile is queueing
	done    chan struct{}

	// abandoned: SendFile returned early (cancelled, or the Path
	// failed), and the caller may have closed src; its blocks are
	// dropped unread and unsent. Set by abandon, which waits for the
	// reads under way (reading) to end first.
	abandoned atomic.Bool
	reading   sync.WaitGroup
	// noSendfile: sendfile refused this file; its blocks are copied.
	noSendfile atomic.Bool
	// holes: the file, when it has holes and the peer takes blocks of
	// zeros (WithZeroBlocks): a block in a hole goes as a header alone.
	// [dataFrom, dataTo) is the last run of data found in it (under mu):
	// the blocks within it are read without asking again.
	holes            *os.File
	dataFrom, dataTo int64

	// What every block of the job shares; set before the first is queued.
	from *source // the file's record, which says whether it was stopped
	src  io.ReaderAt
	zc   *os.File // large blocks go with sendfile from here; nil: copied
	id   uint32
	off  int64 // where the first block starts
	end  int64
	bs   int64 // block length (the last may be shorter)

	mu    sync.Mutex
	crc   uint32           // CRC-32C of the blocks before next
	next  int64            // the first block whose CRC is not in crc
	held  map[int64]uint32 // CRCs of blocks read out of order, by index
	err   error            // why the block at errAt could not be read
	errAt int64            // the first block in the file that could not be
}

// errNotSent is a writer's report that it wrote nothing of a block and
// that this is not the connection's fault (the block's SendFile was
// abandoned).
var errNotSent = errors.New("datachan: block not sent")

func (j *sendJob) finish() {
	if j.pending.Add(-1) == 0 {
		close(j.done)
	}
}

// blockLen is the length of the job's block that starts at pos.
func (j *sendJob) blockLen(pos int64) int64 { return min(j.bs, j.end-pos) }

// readJobBlock reads, checks and frames job j's block at pos, for a
// writer; nil if it is not to be sent (the job was abandoned or failed:
// a read error is kept for SendFile).
func (p *Path) readJobBlock(j *sendJob, pos int64) *frame {
	j.mu.Lock()
	if j.abandoned.Load() || j.err != nil || j.from.stopped.Load() {
		j.mu.Unlock()
		return nil
	}
	j.reading.Add(1)
	j.mu.Unlock()
	defer j.reading.Done()
	if j.holes != nil && j.inHole(pos) {
		f, c := p.zeroBlock(j.src, j.id, pos, j.blockLen(pos))
		j.add(pos, c)
		f.job = j
		return f
	}
	zc := j.zc
	if zc != nil && j.noSendfile.Load() {
		// sendfile refused this file: its later blocks are read once
		// into frames, not read for the CRC and again by the copier.
		zc = nil
	}
	f, c, err := p.readBlock(j.src, zc, j.id, pos, j.blockLen(pos))
	if err != nil {
		j.fail(pos, fmt.Errorf("datachan: reading file %d at %d: %w", j.id, pos, err))
		return nil
	}
	j.add(pos, c)
	f.job = j
	return f
}

// inHole reports whether the job's block at pos lies wholly in a hole
// of its file, asking the file system only outside the last run of data
// found: a file with few holes, or one a file system compresses (which
// says it has holes and has none), costs a few lseeks, not one a block.
func (j *sendJob) inHole(pos int64) bool {
	l := j.blockLen(pos)
	j.mu.Lock()
	known := j.dataFrom <= pos && pos+l <= j.dataTo
	j.mu.Unlock()
	if known {
		return false
	}
	hole, from, to := dataAt(j.holes, pos, l)
	if !hole && to > from {
		j.mu.Lock()
		j.dataFrom, j.dataTo = from, to
		j.mu.Unlock()
	}
	return hole
}

// abandon marks the job abandoned and waits for the reads of its src
// under way: once it returns, no writer reads src again (SendFile's
// caller may close it).
func (j *sendJob) abandon() {
	j.mu.Lock()
	j.abandoned.Store(true)
	j.mu.Unlock()
	j.reading.Wait()
}

// failed reports whether a block of the job could not be read.
func (j *sendJob) failed() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err != nil
}

// fail records that the block at pos could not be read: of several
// (writers read in parallel), the first in the file is the one told.
func (j *sendJob) fail(pos int64, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil || pos < j.errAt {
		j.err, j.errAt = err, pos
	}
}

// add records the CRC c of the block at pos, combining it into the
// file's CRC as soon as every block before it has been.
func (j *sendJob) add(pos int64, c uint32) {
	i := (pos - j.off) / j.bs
	j.mu.Lock()
	defer j.mu.Unlock()
	if i != j.next {
		if j.held == nil {
			j.held = make(map[int64]uint32)
		}
		j.held[i] = c
		return
	}
	for ok := true; ok; c, ok = j.held[j.next] {
		delete(j.held, j.next)
		start := j.off + j.next*j.bs
		j.crc = framing.CombineCRC32C(j.crc, c, j.blockLen(start))
		j.next++
	}
}

// SendFile sends bytes [off, off+n) of src as file id and returns their
// CRC-32C once every block has been written to a connection. src must
// stay readable until Release(id): a block the peer reports damaged is
// read again. Several SendFiles may run at once; their blocks interleave.
func (p *Path) SendFile(ctx context.Context, id uint32, src io.ReaderAt, off, n int64) (uint32, error) {
	if off < 0 || n < 0 || off+n < off {
		return 0, fmt.Errorf("datachan: SendFile of file %d: bad range %d+%d", id, off, n)
	}
	from, err := p.register(id, src, off, off+n)
	if err != nil {
		return 0, err
	}
	if from.stopped.Load() {
		return 0, &StoppedError{id}
	}
	bs := int64(p.cfg.blockSize)
	if p.cfg.batch && n > 0 && n <= min(maxBatched, bs) {
		return p.sendBatched(id, src, off, n)
	}
	job := &sendJob{done: make(chan struct{}), from: from, src: src, id: id, off: off, end: off + n, bs: bs}
	job.pending.Store(1)
	if file := p.zeroCopySource(src); file != nil && n >= zeroCopyMin {
		job.zc = file
	}
	if n >= minZeroBlock {
		// (A gap a resume sends is often one block: QA aa, a resumed
		// sparse image's one-block gaps went as data.)
		job.holes = p.holesOf(src)
	}
	if n > 0 && n <= bs {
		// One block: read here, and written here too if a connection
		// is free (no hand-off to a writer and back).
		var f *frame
		var c uint32
		var err error
		if job.holes != nil && job.inHole(off) {
			f, c = p.zeroBlock(src, id, off, n)
		} else if f, c, err = p.readBlock(src, job.zc, id, off, n); err != nil {
			return 0, fmt.Errorf("datachan: reading file %d at %d: %w", id, off, err)
		}
		if p.writeInline(f) {
			if err := p.Err(); err != nil {
				return 0, err
			}
			return c, nil
		}
		job.add(off, c)
		f.job = job
		if err := p.queue(ctx, job, f); err != nil {
			return 0, err
		}
	} else {
		for pos := off; pos < job.end && !job.failed() && !from.stopped.Load(); pos += bs {
			// A block to be read by the writer that takes it (none
			// more once one could not be read).
			t := p.getFrame(1)
			t.payload = t.payload[:0]
			t.job, t.unread, t.srcOff = job, true, pos
			if err := p.queue(ctx, job, t); err != nil {
				return 0, err
			}
		}
	}
	job.finish()
	select {
	case <-job.done:
	case <-ctx.Done():
		job.abandon()
		return 0, ctx.Err()
	case <-p.failed:
		select {
		case <-job.done: // everything was written before the failure
		default:
			job.abandon()
			return 0, p.Err()
		}
	}
	if job.err != nil {
		// The file, not the path, failed (it shrank, say): the blocks
		// read before went out first, so that the engine's next packets
		// (a Z that discards the file) follow them.
		return 0, job.err
	}
	if from.stopped.Load() {
		return 0, &StoppedError{id}
	}
	return job.crc, nil
}

// queue hands f, a block of job, to the connections' writers.
func (p *Path) queue(ctx context.Context, job *sendJob, f *frame) error {
	job.pending.Add(1)
	select {
	case p.sendq <- f:
		return nil
	case <-ctx.Done():
		job.abandon()
		p.putFrame(f)
		return ctx.Err()
	case <-p.failed:
		job.abandon()
		p.putFrame(f)
		return p.Err()
	}
}

// readBlock returns the block of bytes [pos, pos+l) of file id read
// from src, its header put, and the CRC-32C of those bytes: with zc and a
// large block, a header-only frame that sendfile fills from zc, else a
// frame holding the bytes (compressed, if the Path compresses).
func (p *Path) readBlock(src io.ReaderAt, zc *os.File, id uint32, pos, l int64) (*frame, uint32, error) {
	if zc != nil && l >= zeroCopyMin {
		// The CRC needs the bytes, so they are read anyway, but into a
		// buffer the pool gives back warm; the socket gets them from
		// the page cache, not from a copy.
		scratch := p.getFrame(int(l))
		if err := readFullAt(src, scratch.payload, pos); err != nil {
			p.putFrame(scratch)
			return nil, 0, err
		}
		c := framing.CRC32C(scratch.payload)
		p.putFrame(scratch)
		f := p.getFrame(1)
		f.payload = f.payload[:0]
		f.src, f.srcOff, f.n = zc, pos, int(l)
		framing.BlockHeader{FileID: id, Offset: uint64(pos), Length: uint32(l), PayloadCRC: c}.Put(f.hdr())
		return f, c, nil
	}
	f := p.getFrame(int(l))
	if err := readFullAt(src, f.payload, pos); err != nil {
		p.putFrame(f)
		return nil, 0, err
	}
	f, c := p.sealBlock(f, id, pos)
	return f, c, nil
}

// A FileSource is a SendFile src backed by an open file (a wrapper that
// counts progress, say): on plaintext TCP connections SendFile sends its
// large blocks with sendfile(2) from File, though it still reads each
// block through ReadAt for its CRC. An *os.File is a FileSource of
// itself.
type FileSource interface {
	io.ReaderAt
	File() *os.File // nil: not backed by a file after all
}

// zeroCopySource returns the file to send src's blocks from with
// sendfile, or nil if they must be copied.
func (p *Path) zeroCopySource(src io.ReaderAt) *os.File {
	if !p.zeroCopy || p.cfg.compress {
		return nil
	}
	switch s := src.(type) {
	case *os.File:
		return s
	case FileSource:
		return s.File()
	}
	return nil
}

// register records src for resend requests of [off, end) of file id,
// and returns the file's record.
func (p *Path) register(id uint32, src io.ReaderAt, off, end int64) (*source, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	s := p.sources[id]
	if s == nil {
		s = &source{src: src}
		p.sources[id] = s
		p.maxSource = max(p.maxSource, id)
	}
	s.src = src
	if end > off {
		s.ranges = append(s.ranges, [2]int64{off, end})
	}
	return s, nil
}

// Release forgets file id's src; the peer may no longer ask for its
// blocks.
func (p *Path) Release(id uint32) {
	p.mu.Lock()
	delete(p.sources, id)
	if t := p.doomed[id]; t != nil {
		t.Stop()
		delete(p.doomed, id)
	}
	p.mu.Unlock()
}

// isReleased reports whether file id has been released (Release): no
// block of it is read or sent again.
func (p *Path) isReleased(id uint32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sources[id] == nil
}

// doomGrace is how long a file whose block could not be read again (it
// shrank) has to be released before the Path fails: its engine should
// have discarded it, but if it had already ended the file normally the
// receiver waits for that block, and only failing the Path tells it.
const doomGrace = 20 * time.Second

// doom fails the Path with err unless file id is released within
// doomGrace.
func (p *Path) doom(id uint32, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.doomed[id] != nil || p.sources[id] == nil {
		return
	}
	if p.doomed == nil {
		p.doomed = make(map[uint32]*time.Timer)
	}
	p.doomed[id] = time.AfterFunc(doomGrace, func() { p.fail(err) })
}

// resend is a block the peer asked for again.
type resend struct {
	src io.ReaderAt
	r   framing.ResendRequest
}

// resend queues a resend request from the peer for the resend loop. It
// never waits.
func (s *stream) resend(r framing.ResendRequest) error {
	p := s.p
	off, end := int64(r.Offset), int64(r.Offset)+int64(r.Length)
	p.mu.Lock()
	src := p.sources[r.FileID]
	if src != nil && r.Length == 0 {
		// "The block at off": a compressed block arrived damaged, and
		// its receiver could not trust what length it stood for. Blocks
		// are cut from the start of their range every blockSize bytes.
		end = src.blockEnd(off, int64(p.cfg.blockSize))
		r.Length = uint32(max(end-off, 0))
	}
	if src == nil && r.FileID <= p.maxSource {
		// Released (file ids are given in order, and registered so):
		// asked for before the peer read the Z that discarded the file
		// (one that shrank, a canceled one), and read here after the
		// Z's ACK released it, the peer no longer wants it. (Of a file
		// it kept, the peer asks for nothing once it has ACKed its Z.)
		p.mu.Unlock()
		return nil
	}
	if src != nil && src.stopped.Load() {
		p.mu.Unlock()
		return nil // the peer let the file go
	}
	if src == nil || r.Length == 0 || !src.covers(off, end) {
		p.mu.Unlock()
		return s.protocolError("peer asked to resend [%d,%d) of file %d, which is not being sent", off, end, r.FileID)
	}
	if len(p.resends) >= maxDeferred {
		p.mu.Unlock()
		return s.protocolError("more than %d resend requests queued", maxDeferred)
	}
	p.resends = append(p.resends, resend{src.src, r})
	p.mu.Unlock()
	select {
	case p.resendReady <- struct{}{}:
	default:
	}
	return nil
}

// resendLoop serves resend requests one at a time: it reads the block
// again from its src and queues it for any connection.
func (p *Path) resendLoop() {
	for {
		p.mu.Lock()
		var next resend
		n := len(p.resends)
		if n > 0 {
			next = p.resends[0]
			p.resends[0] = resend{}
			p.resends = p.resends[1:]
		}
		p.mu.Unlock()
		if n == 0 {
			select {
			case <-p.resendReady:
				continue
			case <-p.failed:
				return
			}
		}
		r := next.r
		if p.isReleased(r.FileID) {
			continue // its file was let go since it was asked for
		}
		f := p.getFrame(int(r.Length))
		n, err := readAt(next.src, f.payload, int64(r.Offset))
		if err != nil {
			if p.isReleased(r.FileID) {
				// Released (and its file closed) while being read.
				p.putFrame(f)
				continue
			}
			err = fmt.Errorf("datachan: re-reading file %d at %d: %w", r.FileID, r.Offset, err)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				p.putFrame(f)
				p.fail(err)
				return
			}
			// The file shrank while it was sent. Its engine finds that
			// out (the file's size changed) and ends the file with a Z
			// that discards it, whose ACK releases it; but if the
			// engine had ended it already (cut after its last look),
			// the receiver waits for this block. It goes padded with
			// zeros, under a check of what it carries: the whole file's
			// check then fails at the receiver, which refuses that file
			// alone (a kerf peer; an older one ends the session). The
			// file stays doomed: unreleased, it fails the Path later.
			clear(f.payload[max(n, 0):])
			p.doom(r.FileID, err)
		}
		f, _ = p.sealBlock(f, r.FileID, int64(r.Offset))
		// Counted before it is queued: a writer may send it, and the
		// peer take it, before this goroutine runs again (tests read
		// the count once the file has arrived).
		p.stats.blocksResent.Add(1)
		select {
		case p.sendq <- f:
		case <-p.failed:
			p.stats.blocksResent.Add(-1)
			p.putFrame(f)
			return
		}
	}
}

// blockEnd returns where the block that SendFile cut at off ends, with
// blocks of bs bytes from the start of each range; 0 if no block starts
// at off.
func (s *source) blockEnd(off, bs int64) int64 {
	for _, r := range s.ranges {
		if r[0] <= off && off < r[1] && (off-r[0])%bs == 0 {
			return min(off+bs, r[1])
		}
	}
	return 0
}

// covers reports whether [off, end) lies within one range given to
// SendFile.
func (s *source) covers(off, end int64) bool {
	if off < 0 || end < off {
		return false
	}
	for _, r := range s.ranges {
		if r[0] <= off && end <= r[1] {
			return true
		}
	}
	return false
}

// writeLoop writes frames to the connection: its own resend requests
// first, then blocks from the shared queue, whichever connection is free
// taking the next one.
func (s *stream) writeLoop() {
	p := s.p
	for {
		if r, ok := s.nextCtl(); ok {
			r.Put(s.ctlHdr[:])
			s.wmu.Lock()
			_, err := s.conn.Write(s.ctlHdr[:])
			s.wmu.Unlock()
			if err != nil {
				p.fail(s.lost(err))
				return
			}
			continue
		}
		var f *frame
		select {
		case <-s.ctlSignal:
			continue
		case f = <-p.sendq:
		case <-p.failed:
			return
		}
		if f.unread {
			job, at := f.job, f.srcOff
			p.putFrame(f)
			if f = p.readJobBlock(job, at); f == nil {
				job.finish()
				continue
			}
		}
		err := s.writeFrame(f)
		if err == errNotSent {
			err = nil
		}
		if err == nil && f.job != nil {
			f.job.finish()
		}
		p.putFrame(f)
		if err != nil {
			p.fail(s.lost(err))
			return
		}
	}
}

// nextCtl takes the first queued resend request.
func (s *stream) nextCtl() (framing.ResendRequest, bool) {
	s.ctlMu.Lock()
	defer s.ctlMu.Unlock()
	if len(s.ctl) == 0 {
		return framing.ResendRequest{}, false
	}
	r := s.ctl[0]
	s.ctl = s.ctl[1:]
	return r, true
}

// writeFrame writes a block.
func (s *stream) writeFrame(f *frame) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.write(f)
}

// Small single-block files are batched: SendFile appends their frames to
// the Path's batch, which Flush writes in one call (kermit flushes before
// it writes its control packets, so a file's data always goes out no
// later than its Z). The batch is written early once it holds
// batchLimit bytes.
const (
	maxBatched = 32 << 10
	batchLimit = 128 << 10
)

// sendBatched reads a small file of one block straight into the batch,
// behind room for its header: one write and one wake-up of the receiver
// for several files, no pooled frame, no hand-off to a writer goroutine.
func (p *Path) sendBatched(id uint32, src io.ReaderAt, off, n int64) (uint32, error) {
	if p.cfg.compress {
		return p.sendBatchedCompressed(id, src, off, n)
	}
	p.batchMu.Lock()
	start := len(p.batch)
	p.batch = slices.Grow(p.batch, framing.BlockHeaderLen+int(n))[:start+framing.BlockHeaderLen+int(n)]
	frame := p.batch[start:]
	payload := frame[framing.BlockHeaderLen:]
	if err := readFullAt(src, payload, off); err != nil {
		p.batch = p.batch[:start]
		p.batchMu.Unlock()
		return 0, fmt.Errorf("datachan: reading file %d at %d: %w", id, off, err)
	}
	c := framing.CRC32C(payload)
	framing.BlockHeader{FileID: id, Offset: uint64(off), Length: uint32(n), PayloadCRC: c}.Put(frame)
	return c, p.batched(int64(len(payload)))
}

// batched counts a frame just added to the batch, which the caller had
// locked, unlocks it, and flushes the batch if it is full.
func (p *Path) batched(payloadBytes int64) error {
	p.batchBlocks++
	p.batchBytes += payloadBytes
	full := len(p.batch) >= batchLimit
	p.batchMu.Unlock()
	if full {
		if err := p.Flush(); err != nil {
			return err
		}
	}
	return p.Err()
}

// sendBatchedCompressed is sendBatched for a Path that compresses: the
// file is read into a frame, sealed (compressed where that pays), and
// the frame copied into the batch.
func (p *Path) sendBatchedCompressed(id uint32, src io.ReaderAt, off, n int64) (uint32, error) {
	f := p.getFrame(int(n))
	if err := readFullAt(src, f.payload, off); err != nil {
		p.putFrame(f)
		return 0, fmt.Errorf("datachan: reading file %d at %d: %w", id, off, err)
	}
	f, c := p.sealBlock(f, id, off)
	p.batchMu.Lock()
	p.batch = append(p.batch, f.wire()...)
	payloadBytes := int64(len(f.payload))
	p.putFrame(f)
	return c, p.batched(payloadBytes)
}

// Flush writes the batched frames of small files, if any, on a free
// connection (or waits for the first one).
func (p *Path) Flush() error {
	p.batchMu.Lock()
	defer p.batchMu.Unlock()
	if len(p.batch) == 0 {
		return nil
	}
	// Written, or never to be: the batch is let go either way. Kept after
	// a failure, it failed every later flush, and a server reading its
	// next command flushes first: the command failed at once, was logged,
	// and was read again, 80,000 times a second (QA).
	defer func() { p.batch, p.batchBlocks, p.batchBytes = p.batch[:0], 0, 0 }()
	if err := p.Err(); err != nil {
		return err
	}
	s := p.lockFreeStream()
	if s == nil {
		s = p.streams[0]
		s.wmu.Lock()
	}
	_, err := s.conn.Write(p.batch)
	s.wmu.Unlock()
	if err != nil {
		p.fail(s.lost(err))
		return p.Err()
	}
	p.stats.blocksSent.Add(p.batchBlocks)
	p.stats.bytesSent.Add(p.batchBytes)
	return nil
}

// writeInline writes f on the caller's goroutine if a connection is free
// and no queued block waits for one, and reports whether it did; it
// consumes f either way it returns true. A write error fails the Path.
func (p *Path) writeInline(f *frame) bool {
	if len(p.sendq) > 0 {
		return false // keep the order of what is already queued
	}
	s := p.lockFreeStream()
	if s == nil {
		return false
	}
	err := s.write(f)
	s.wmu.Unlock()
	// Never errNotSent: that needs an abandoned job, and f, the only
	// block of its file, is written before it is given one.
	if err != nil {
		p.fail(s.lost(err))
	}
	p.putFrame(f)
	return true
}

// lockFreeStream returns a connection no one is writing to, with its
// wmu held, or nil if all are busy.
func (p *Path) lockFreeStream() *stream {
	for _, s := range p.streams {
		if s.wmu.TryLock() {
			return s
		}
	}
	return nil
}
