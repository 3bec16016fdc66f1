package datachan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"kerf/framing"
)

// early is a block of a file that was not expected when it arrived:
// parked (f holds the payload) or deferred (f is nil; ask again).
type early struct {
	s *stream
	h framing.BlockHeader
	f *frame
}

// recvFile is a file being received: its range, where it goes, and what
// has arrived. Guarded by Path.mu.
type recvFile struct {
	id          uint32
	dst         io.WriterAt // nil once Wait has returned
	off, end    uint64
	got         spans    // accepted blocks (queued or written)
	wrote       spans    // blocks written to dst (CRCs not kept)
	writing     int      // blocks being written or queued to be
	busy        bool     // a goroutine is writing the file's blocks
	queued      []*frame // blocks left to that goroutine
	queuedBytes int      // their payload bytes
	err         error    // a WriteAt failure
	done        chan struct{}
	abandoned   bool // Abandon let it go: what comes of it is dropped
	stopping    bool // Abandon is writing out what was queued: no more
	// firstSpans back got and wrote while each holds one range, as a
	// file in order does: no allocation for either per file.
	firstSpans [2]span
}

// allGot reports whether every block of the range has come.
func (f *recvFile) allGot() bool {
	return f.end == f.off || len(f.got) == 1 && f.got[0].start == f.off && f.got[0].end == f.end
}

// complete reports whether every byte of the range is on dst.
func (f *recvFile) complete() bool {
	if f.err != nil {
		return false
	}
	return f.end == f.off || len(f.wrote) == 1 && f.wrote[0].start == f.off && f.wrote[0].end == f.end
}

// Expect announces that bytes [off, off+n) of file id will arrive and are
// to be written to dst. Blocks of id that arrived before are taken from
// the park, or asked for again if the park was full.
//
// On a failed Path it still takes the file and writes the blocks parked
// for it, then returns the Path's error: a file cut off
// before its receiver took it keeps them, Abandon counting them, as it
// would had they come a moment later (a get cut 3 MiB in kept nothing
// when its first blocks beat the file's A).
func (p *Path) Expect(id uint32, dst io.WriterAt, off, n int64) error {
	return p.ExpectKept(id, dst, off, n, nil)
}

// ExpectKept is Expect of a file of which dst already holds the ranges
// kept (a resumed partial's data past its gap-free prefix, their CRCs
// read from dst): they count as received, and the sender sends only
// what lies between them. They must be sorted, disjoint and within
// [off, off+n).
func (p *Path) ExpectKept(id uint32, dst io.WriterAt, off, n int64, kept []framing.KeptRange) error {
	if off < 0 || n < 0 || off+n < off {
		return fmt.Errorf("datachan: Expect of file %d: bad range %d+%d", id, off, n)
	}
	if len(kept) >= maxGaps {
		return fmt.Errorf("datachan: Expect of file %d: %d kept ranges, more than a file may have", id, len(kept))
	}
	for i, r := range kept {
		if r.Off < off || r.End > off+n || r.End <= r.Off || i > 0 && r.Off <= kept[i-1].End {
			return fmt.Errorf("datachan: Expect of file %d: kept range [%d,%d) is not sorted, apart and within [%d,%d)", id, r.Off, r.End, off, off+n)
		}
	}
	p.mu.Lock()
	failed := p.err
	if p.files[id] != nil || p.finished.has(id) {
		p.mu.Unlock()
		return fmt.Errorf("datachan: file %d is already expected", id)
	}
	p.forgetWaitedLocked(id)
	f := &recvFile{id: id, dst: dst, off: uint64(off), end: uint64(off + n), done: make(chan struct{})}
	f.got, f.wrote = f.firstSpans[0:0:1], f.firstSpans[1:1:2]
	for _, r := range kept {
		// Apart and sorted: neither add can fail.
		f.got.add(uint64(r.Off), uint64(r.End), r.CRC)
		f.wrote.add(uint64(r.Off), uint64(r.End), 0)
	}
	if n == 0 || f.complete() {
		close(f.done)
	}
	p.files[id] = f
	parked, deferred := p.parked[id], p.deferred[id]
	delete(p.parked, id)
	delete(p.deferred, id)
	p.nDeferred -= len(deferred)
	var err error
	admitted := parked[:0]
	var compressed []early // decoded after the lock
	for _, e := range parked {
		p.parkedBytes -= e.f.payloadCap()
		unpark(e.f.payloadCap())
		if err != nil {
			p.putFrame(e.f)
			continue
		}
		if e.h.Flags&framing.BlockFlagCompressed != 0 {
			compressed = append(compressed, e)
			continue
		}
		var ok bool
		if ok, err = p.admitLocked(f, e.h); ok {
			e.f.file = f
			admitted = append(admitted, e)
		} else {
			p.putFrame(e.f)
		}
	}
	p.mu.Unlock()
	if err != nil {
		for _, e := range compressed {
			p.putFrame(e.f)
		}
		err = fmt.Errorf("%w: %w", ErrProtocol, err)
		p.fail(err)
		if failed != nil {
			return failed
		}
		return err
	}
	// The file's first blocks are here already: write them now rather
	// than hand them to a disk writer and wait for it (for a small file
	// this is the whole file, and Wait then returns at once).
	for _, e := range admitted {
		p.store(e.f)
	}
	if failed != nil {
		// No stream delivers now: decoded here, and nothing asked for.
		for _, e := range compressed {
			p.storeParkedCompressed(f, e)
		}
		return failed
	}
	for i, e := range compressed {
		if err := e.s.decodeAndDeliver(e.f); err != nil {
			for _, e := range compressed[i+1:] {
				p.putFrame(e.f)
			}
			p.fail(err)
			return err
		}
	}
	for _, e := range deferred {
		if err := e.s.requestResend(e.h); err != nil {
			p.fail(err)
			return err
		}
	}
	return nil
}

// storeParkedCompressed decodes a compressed block parked for f and
// writes it, on a failed Path (Expect); one that does not decode, or
// does not fit, is dropped: the prefix ends before it.
func (p *Path) storeParkedCompressed(f *recvFile, e early) {
	out, h, err := p.decompressBlock(e.f, e.h)
	if err != nil {
		return
	}
	p.mu.Lock()
	ok, err := p.admitLocked(f, h)
	p.mu.Unlock()
	if !ok || err != nil {
		p.putFrame(out)
		return
	}
	out.h, out.file = h, f
	p.store(out)
}

// Wait blocks until every byte of file id has been verified and written,
// and returns the CRC-32C of the expected range.
func (p *Path) Wait(ctx context.Context, id uint32) (uint32, error) {
	p.mu.Lock()
	f := p.files[id]
	p.mu.Unlock()
	if f == nil {
		return 0, fmt.Errorf("datachan: Wait for file %d, which was not expected", id)
	}
	select {
	case <-f.done:
	case <-p.failed:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case f.err != nil:
		return 0, f.err
	case !f.complete():
		return 0, p.err
	}
	f.dst = nil // the caller may close it now; f stays to spot duplicates
	p.waited = append(p.waited, id)
	if len(f.got) == 0 {
		return 0, nil // empty range
	}
	return f.got[0].crc, nil
}

// forgetWaitedLocked drops the records of files received whole whose
// Wait returned, and of files abandoned, ids below next (the file being
// expected now: the engine is done with those before it), keeping only
// their ids in finished; a later block of one is then dropped as a
// duplicate, not parked for a file to come.
func (p *Path) forgetWaitedLocked(next uint32) {
	keep := p.waited[:0]
	for _, id := range p.waited {
		f := p.files[id]
		switch {
		case f == nil:
		case id < next && f.dst == nil && f.writing == 0 && (f.complete() || f.abandoned) && p.finished.add(id):
			delete(p.files, id)
		default:
			keep = append(keep, id)
		}
	}
	p.waited = keep
}

// Ready reports whether Wait(id) would return without blocking: file id
// is expected and complete or failed, or the Path has failed.
func (p *Path) Ready(id uint32) bool {
	p.mu.Lock()
	f := p.files[id]
	p.mu.Unlock()
	if f == nil {
		return true // Wait fails at once
	}
	select {
	case <-f.done:
		return true
	case <-p.failed:
		return true
	default:
		return false
	}
}

// readLoop reads frames from the connection until it fails or the Path
// stops.
func (s *stream) readLoop() {
	if s.diskq != nil {
		defer func() {
			// diskLoop writes what is queued, then ends.
			s.diskMu.Lock()
			s.diskClosed = true
			close(s.diskq)
			s.diskMu.Unlock()
		}()
	}
	if s.pairing != nil {
		if err := s.readPairing(); err != nil {
			s.p.fail(err)
			return
		}
	}
	p := s.p
	for {
		if err := s.readFull(s.hdr[:], s.lastBlockBig); err != nil {
			p.fail(s.lost(err))
			return
		}
		var err error
		switch string(s.hdr[:4]) {
		case framing.BlockMagic:
			err = s.readBlock()
		case framing.ResendMagic:
			var r framing.ResendRequest
			if r, err = framing.ParseResendRequest(s.hdr[:]); err != nil {
				err = s.headerError(fmt.Errorf("%w: stream %d: %w", ErrProtocol, s.idx, err))
			} else if r.Stop {
				err = s.stop(r.FileID)
			} else {
				err = s.resend(r)
			}
		default:
			err = s.protocolError("bad frame magic %q; the stream cannot be resynchronised", s.hdr[:4])
			if !s.sealed {
				err = &damagedStream{err}
			}
		}
		if err != nil {
			p.fail(err)
			return
		}
	}
}

// headerError is err, a frame header that does not parse, marked as
// damage on the way where its check failed on a stream that damage can
// reach (damagedStream); a header whose check passed and whose fields
// are wrong is the peer's, as is any over a sealed stream (review 57b:
// a server sending bad headers over TLS was dialled again for minutes).
func (s *stream) headerError(err error) error {
	if !s.sealed && errors.Is(err, framing.ErrBlockHeaderCheck) {
		return &damagedStream{err}
	}
	return err
}

// readBlock reads the payload of the block whose header is in s.hdr,
// checks it and hands it to the disk writer, or asks for it again.
func (s *stream) readBlock() error {
	p := s.p
	h, err := framing.ParseBlockHeader(s.hdr[:])
	if err != nil {
		// The length cannot be trusted, so the next frame cannot be found.
		return s.headerError(fmt.Errorf("%w: stream %d: %w; the stream cannot be resynchronised", ErrProtocol, s.idx, err))
	}
	if h.Length == 0 {
		return s.protocolError("file %d offset %d: empty block", h.FileID, h.Offset)
	}
	if lim := p.cfg.receiveLimit(); int(h.Length) > lim {
		return s.protocolError("file %d offset %d: a block of %d bytes, more than this receiver takes (%d): send with --block-size %d or less (a kerf client from before the server told it its limit sends what it is given)", h.FileID, h.Offset, h.Length, lim, lim)
	}
	if h.Flags&framing.BlockFlagZeros != 0 {
		return s.readZeros(h) // no payload
	}
	if h.Flags&framing.BlockFlagCompressed != 0 && !p.cfg.compress {
		// Only a peer that agreed may send them: a server that refused
		// compression spends nothing decoding.
		return s.protocolError("file %d offset %d: a compressed block, but compression was not agreed", h.FileID, h.Offset)
	}
	s.in.w.reading(h.FileID, h.Offset) // watchHeld: what this connection is in the middle of
	f, err := s.readPayload(int(h.Length))
	s.in.w.between()
	if err != nil {
		return s.lost(err)
	}
	s.lastBlockBig = h.Length >= smallFrameBuf/2
	if framing.CRC32C(f.payload) != h.PayloadCRC {
		p.putFrame(f)
		p.stats.badBlocks.Add(1)
		n, many := p.noteDamage(h)
		if n >= maxDamage {
			return fmt.Errorf("%w: the block at %d of file %d (%d bytes) arrived damaged %d times (its check fails: a faulty link, network card or middlebox; TLS data connections would stop at the first)",
				ErrDamaging, h.Offset, h.FileID, h.Length, n)
		}
		if many {
			return fmt.Errorf("%w: %d blocks arrived damaged and have not come whole since (the latest at %d of file %d)", ErrDamaging, maxDamaged, h.Offset, h.FileID)
		}
		if h.Flags&framing.BlockFlagCompressed != 0 {
			// How many file bytes it stood for is in the damaged
			// payload: ask for "the block at this offset".
			h.Length = 0
		}
		return s.requestResend(h)
	}
	p.stats.wireReceived.Add(int64(h.Length))
	f.h = h
	return s.deliver(f)
}

// payloadFirst is the most of a block's payload read before the rest
// of its buffer is taken: a header may claim 16 MiB, and a peer that
// then sends nothing (or trickles) held that much per connection for
// the idle timeout (QA: 3 stalled sessions of 8 connections took the
// server from 22 MB to 424 MB). Blocks of the default size (1 MiB) read
// as before; a bigger one costs one copy of its first MiB.
const payloadFirst = 1 << 20

// readPayload reads an n-byte payload into a pooled frame, the buffer of
// a big one taken only once its first payloadFirst bytes have come.
func (s *stream) readPayload(n int) (*frame, error) {
	p := s.p
	if n <= payloadFirst {
		f := p.getFrame(n)
		if err := s.readFull(f.payload, false); err != nil {
			p.putFrame(f)
			return nil, err
		}
		return f, nil
	}
	head := p.getFrame(payloadFirst)
	if err := s.readFull(head.payload, false); err != nil {
		p.putFrame(head)
		return nil, err
	}
	f := p.getFrame(n)
	copy(f.payload, head.payload)
	p.putFrame(head)
	if err := s.readFull(f.payload[payloadFirst:], false); err != nil {
		p.putFrame(f)
		return nil, err
	}
	return f, nil
}

// decodeAndDeliver decodes the compressed block f, whose file is
// expected, and delivers what it stands for.
func (s *stream) decodeAndDeliver(f *frame) error {
	out, h, err := s.p.decompressBlock(f, f.h)
	if err != nil {
		return s.protocolError("file %d offset %d: compressed block does not decode: %v", h.FileID, h.Offset, err)
	}
	out.h = h
	return s.deliver(out)
}

// blockKey names a block for noteDamage.
type blockKey struct {
	file uint32
	off  uint64
}

// noteDamage counts a damaged arrival of block h and returns the count
// (deliver forgets a block that arrives whole); many reports that h
// would be one block too many on the record (maxDamaged).
func (p *Path) noteDamage(h framing.BlockHeader) (n int, many bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.damaged == nil {
		p.damaged = map[blockKey]int{}
	}
	k := blockKey{h.FileID, h.Offset}
	if _, ok := p.damaged[k]; !ok && len(p.damaged) >= maxDamaged {
		return 0, true
	}
	p.damaged[k]++
	return p.damaged[k], false
}

// requestResend asks the peer, on this connection, for block h again.
// It never waits.
func (s *stream) requestResend(h framing.BlockHeader) error {
	s.ctlMu.Lock()
	if len(s.ctl) >= maxDeferred {
		s.ctlMu.Unlock()
		return s.protocolError("more than %d resend requests queued", maxDeferred)
	}
	s.ctl = append(s.ctl, framing.ResendRequest{FileID: h.FileID, Offset: h.Offset, Length: h.Length})
	s.ctlMu.Unlock()
	select {
	case s.ctlSignal <- struct{}{}:
	default:
	}
	return nil
}

// SettleBelow says that every file id below next is settled: expected
// already (Expect), or never to come on the data connections (a text
// reply, a file sent in packets). Blocks of such an id that was never
// expected are of an id the peer counted otherwise, which nothing would
// ever claim: SettleBelow returns an error naming one already parked
// (the engine ends the session on it), and any that comes later fails
// the Path (QA am: a third-party client that counted only its
// data-channel files stalled in silence). The kermit engine, which
// expects files in the order of their F packets, says so before each
// Expect.
func (p *Path) SettleBelow(next uint32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settled = max(p.settled, next)
	for _, m := range []map[uint32][]early{p.parked, p.deferred} {
		for id := range m {
			if id < p.settled {
				return strayError(id)
			}
		}
	}
	return nil
}

// Forsake says that file id will never be expected, though its blocks
// may come: the sender counted and sent it, and the receiver read its F
// outside a transfer (the rest of a group its E ended, still on its
// way). Its blocks parked or deferred are dropped, and those that come
// later are dropped as late copies; SettleBelow takes it as settled.
func (p *Path) Forsake(id uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files[id] != nil || p.finished.has(id) || !p.finished.add(id) {
		return // expected after all, or forsaken already
	}
	for _, e := range p.parked[id] {
		p.parkedBytes -= e.f.payloadCap()
		unpark(e.f.payloadCap())
		p.putFrame(e.f)
	}
	delete(p.parked, id)
	p.nDeferred -= len(p.deferred[id])
	delete(p.deferred, id)
}

// strayError says why blocks of file id are never claimed.
func strayError(id uint32) error {
	return fmt.Errorf("datachan: blocks of file id %d came, a file that does not come on the data connections here; file ids count every F and X packet of the control connection (protocol.md §4.1)", id)
}

// deliver takes a verified block: it queues it for its file's disk
// writer, or parks or defers it if the file is not expected yet, or drops
// it as a duplicate.
func (s *stream) deliver(f *frame) error {
	p := s.p
	p.mu.Lock()
	if len(p.damaged) > 0 {
		delete(p.damaged, blockKey{f.h.FileID, f.h.Offset}) // whole at last
	}
	if p.err != nil {
		p.mu.Unlock()
		p.putFrame(f)
		return nil
	}
	file := p.files[f.h.FileID]
	if file == nil && p.finished.has(f.h.FileID) {
		// A late copy of a block of a file received whole.
		p.mu.Unlock()
		p.stats.duplicates.Add(1)
		p.putFrame(f)
		return nil
	}
	if file == nil && f.h.FileID < p.settled {
		id := f.h.FileID
		p.mu.Unlock()
		p.putFrame(f)
		return fmt.Errorf("%w: stream %d: %w", ErrProtocol, s.idx, strayError(id))
	}
	if file == nil {
		// A compressed block is parked as it came: decoded only once its
		// file is expected, so that a peer's blocks of files it never
		// announces cost no decoding (a small one can stand for 16 MiB).
		return s.earlyLocked(f) // unlocks
	}
	if f.h.Flags&framing.BlockFlagCompressed != 0 {
		p.mu.Unlock()
		return s.decodeAndDeliver(f)
	}
	ok, err := p.admitLocked(file, f.h)
	p.mu.Unlock()
	if err != nil || !ok {
		p.putFrame(f)
		if err != nil {
			return fmt.Errorf("%w: stream %d: %w", ErrProtocol, s.idx, err)
		}
		return nil
	}
	f.file = file
	s.queueDisk(f)
	return nil
}

// earlyLocked parks f, whose file is not expected yet, or if the park is
// full drops it and remembers to ask for it again. It unlocks p.mu.
func (s *stream) earlyLocked(f *frame) error {
	p := s.p
	id := f.h.FileID
	if p.parkedBytes+f.payloadCap() <= p.cfg.parkLimit && parkRoom(f.payloadCap()) {
		p.parked[id] = append(p.parked[id], early{s: s, h: f.h, f: f})
		p.parkedBytes += f.payloadCap()
		p.mu.Unlock()
		p.stats.parked.Add(1)
		earlyParked.Add(1)
		return nil
	}
	if p.nDeferred >= maxDeferred {
		p.mu.Unlock()
		p.putFrame(f)
		return s.protocolError("more than %d blocks of files not expected", maxDeferred)
	}
	h := f.h
	if h.Flags&framing.BlockFlagCompressed != 0 {
		// Not decoded, so what length it stands for is unknown: ask for
		// "the block at this offset" (see stream.resend).
		h.Length = 0
	}
	p.deferred[id] = append(p.deferred[id], early{s: s, h: h})
	p.nDeferred++
	p.mu.Unlock()
	p.putFrame(f)
	p.stats.deferred.Add(1)
	earlyDeferred.Add(1)
	return nil
}

// earlyParked and earlyDeferred count the blocks every Path of the
// process parked or deferred (EarlyBlocks).
var earlyParked, earlyDeferred atomic.Int64

// EarlyBlocks returns how many blocks that came before their file was
// expected the process's Paths have parked and deferred, all told.
func EarlyBlocks() (parked, deferred int64) {
	return earlyParked.Load(), earlyDeferred.Load()
}

// admitLocked records verified block h of file f. It reports false for a
// duplicate, and an error for a block that does not fit the file.
func (p *Path) admitLocked(f *recvFile, h framing.BlockHeader) (bool, error) {
	start, end := h.Offset, h.Offset+uint64(h.Length)
	if start < f.off || end > f.end || end < start {
		return false, fmt.Errorf("block [%d,%d) of file %d is outside the expected [%d,%d)", start, end, h.FileID, f.off, f.end)
	}
	if len(f.got) >= maxGaps {
		// Full: only a block that adds no range may come (its
		// neighbours' gaps filled, or a duplicate); see maxGaps.
		if n := len(f.got); !f.got.joins(start, end) {
			return false, fmt.Errorf("file %d: block [%d,%d) would open more than %d separate ranges (%d now): not how a sender cuts a file", h.FileID, start, end, maxGaps, n)
		}
	}
	dup, err := f.got.add(start, end, h.PayloadCRC)
	if err != nil {
		return false, fmt.Errorf("file %d: %w", h.FileID, err)
	}
	if dup {
		p.stats.duplicates.Add(1)
		return false, nil
	}
	p.stats.blocksReceived.Add(1)
	p.stats.bytesReceived.Add(int64(h.Length))
	return true, nil
}

// queueDisk writes an admitted block, or hands it to the connection's
// disk writer if it has one (write-behind), counted against its file
// so that Wait and Abandon wait for it there too.
func (s *stream) queueDisk(f *frame) {
	p := s.p
	if s.diskq == nil {
		p.store(f)
		return
	}
	p.mu.Lock()
	counted := p.countLocked(f)
	p.mu.Unlock()
	if !counted {
		p.putFrame(f)
		return
	}
	s.diskMu.Lock()
	defer s.diskMu.Unlock()
	if s.diskClosed {
		p.storeCounted(f)
		return
	}
	s.diskq <- f // diskLoop takes every block until diskq is closed
}

// diskLoop writes verified blocks to their files until the connection's
// reader, the only one to queue them, has ended (and closed diskq):
// those queued when the Path fails are verified, and written all the
// same (store drops those of files let go).
func (s *stream) diskLoop() {
	p := s.p
	for f := range s.diskq {
		p.storeCounted(f)
	}
}

// Abandon stops writing file id (blocks that arrive later are dropped),
// waits for the blocks already verified to be written, even on a failed
// Path, and returns how many bytes from the start
// of its expected range are on dst without a gap. With several
// connections blocks land out of order, so after an interruption only
// that prefix is worth keeping for recovery; the caller cuts the file
// there. An unknown id has a prefix of 0.
func (p *Path) Abandon(id uint32) int64 {
	prefix, _ := p.AbandonKept(id)
	return prefix
}

// AbandonKept is Abandon that also returns the ranges of the file on
// dst past that prefix, sorted and apart: what a resume need not send
// again (ExpectKept).
func (p *Path) AbandonKept(id uint32) (prefix int64, kept [][2]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.files[id]
	if f == nil {
		return 0, nil
	}
	// Blocks already verified are written first, so that the prefix
	// counts them; those that come from now on are dropped.
	f.stopping = true
	p.forgetDamageLocked(id)
	for f.writing > 0 {
		p.writesDone.Wait()
	}
	f.dst = nil
	if !f.abandoned {
		f.abandoned = true
		p.waited = append(p.waited, id) // forgotten at the next Expect
	}
	ws := f.wrote
	if len(ws) > 0 && ws[0].start == f.off {
		prefix = int64(ws[0].end - f.off)
		ws = ws[1:]
	}
	for _, w := range ws {
		kept = append(kept, [2]int64{int64(w.start), int64(w.end)})
	}
	return prefix, kept
}

// store writes one verified block, and completes its file when it was
// the last one; it puts b back in the pool. A WriteAt error fails that
// file, not the Path.
//
// A file's blocks are written one at a time: a goroutine that finds its
// file being written leaves the block to the writer, which writes it
// next, and goes back to its connection. Two connections' writes to one
// file would otherwise meet on the file's inode lock, where the kernel
// spins (6% of the receiver's CPU for a 1 GiB file over two
// connections). At most maxQueuedBytes wait per file; past that a
// reader waits too, so memory stays bounded.
func (p *Path) store(b *frame) {
	p.mu.Lock()
	if !p.countLocked(b) {
		p.mu.Unlock()
		p.putFrame(b)
		return
	}
	p.storeCountedLocked(b)
}

// countLocked counts block b in its file's writing, for Wait and
// Abandon to wait for, unless it is to be dropped (then false).
func (p *Path) countLocked(b *frame) bool {
	f := b.file
	if p.dropLocked(f) || f.stopping {
		return false
	}
	f.writing++
	return true
}

// storeCounted is store of a block countLocked counted.
func (p *Path) storeCounted(b *frame) {
	p.mu.Lock()
	p.storeCountedLocked(b)
}

// storeCountedLocked is store of a block countLocked counted, with p.mu
// held; it releases p.mu.
func (p *Path) storeCountedLocked(b *frame) {
	f := b.file
	if f.busy && f.queuedBytes+b.held() <= maxQueuedBytes {
		f.queued = append(f.queued, b)
		f.queuedBytes += b.held()
		p.mu.Unlock()
		return
	}
	for f.busy {
		p.writesDone.Wait()
	}
	f.busy = true
	for next := 0; ; next++ {
		p.writeLocked(f, b)
		p.putFrame(b)
		if next == len(f.queued) {
			break
		}
		b = f.queued[next]
		f.queued[next] = nil
		f.queuedBytes -= b.held()
	}
	f.queued = f.queued[:0] // kept for the file's next run
	f.busy = false
	p.writesDone.Broadcast()
	p.mu.Unlock()
}

// dropLocked reports whether a block of f is to be dropped unwritten:
// the file failed, or was let go (Wait returned, or Abandon). store asks
// before it queues a block, and writeLocked asks again for every block,
// since either may have happened while p.mu was released (for an earlier
// write, or waiting for the file's writer).
//
// A failed Path is no reason: its blocks were verified, and a partial
// kept for a resume should hold them (the engine calls Abandon, which
// waits for them, before it closes or cuts the file).
func (p *Path) dropLocked(f *recvFile) bool {
	return f.err != nil || f.dst == nil
}

// maxQueuedBytes bounds the payload bytes waiting for a file's writer.
const maxQueuedBytes = 4 << 20

// writeLocked writes block b of f, which the caller counted in
// f.writing, with p.mu released during the write.
func (p *Path) writeLocked(f *recvFile, b *frame) {
	dst := f.dst
	if p.dropLocked(f) {
		f.writing--
		return
	}
	p.mu.Unlock()
	n := uint64(len(b.payload))
	var err error
	if b.h.Flags&framing.BlockFlagZeros != 0 {
		n = uint64(b.h.Length)
		err = writeZeros(dst, int64(b.h.Offset), int64(n))
	} else {
		_, err = dst.WriteAt(b.payload, int64(b.h.Offset))
	}
	p.mu.Lock()
	f.writing--
	if err == nil {
		start := b.h.Offset
		f.wrote.add(start, start+n, 0)
	}
	if f.err != nil {
		return
	}
	if err != nil {
		f.err = &WriteError{ID: f.id, Offset: int64(b.h.Offset), Err: err}
		close(f.done)
		p.forgetDamageLocked(f.id)
		p.requestStop(f.id) // the rest would cross for nothing
		return
	}
	if f.complete() {
		close(f.done)
		p.forgetDamageLocked(f.id)
	}
}

// WriteError is a received block that could not be written to its
// file (the disk is full, say): that file fails, the Path goes on.
type WriteError struct {
	ID     uint32
	Offset int64
	Err    error
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("datachan: writing file %d at %d: %v", e.ID, e.Offset, e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// FileOnly says the error concerns one file, not the Path (see kermit).
func (e *WriteError) FileOnly() bool { return true }

// forgetDamageLocked drops noteDamage's counts for file id, done with.
func (p *Path) forgetDamageLocked(id uint32) {
	for k := range p.damaged {
		if k.file == id {
			delete(p.damaged, k)
		}
	}
}
