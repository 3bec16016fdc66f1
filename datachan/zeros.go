package datachan

import (
	"io"
	"os"

	"kerf/framing"
)

// WithZeroBlocks says the peer takes blocks of zeros
// (framing.BlockFlagZeros): agreed in the control connection's
// extension field (";H"), by kerfs that have them. A Path so made sends
// each block of a sparse file that lies in a hole as a header alone,
// and takes such blocks from the peer; without it a block of zeros is a
// protocol error. A 100 GB disk image with a few MB of data crossed as
// 100 GB of zeros before (QA w: 93 s over loopback).
func WithZeroBlocks(on bool) Option {
	return func(c *config) { c.zeroBlocks = on }
}

// minZeroBlock is the least a SendFile must send for its holes to be
// looked for: a small file's one block is read whatever it holds.
const minZeroBlock = 64 << 10

// A HoleHinter is a SendFile src that knows, from the fstat its open
// made, whether its file may have holes (known false: not a hint).
type HoleHinter interface {
	MayHaveHoles() (holes, known bool)
}

// holesOf returns the file under src if the Path sends blocks of zeros
// and the file has holes (fewer blocks allocated than its size needs),
// else nil: a file without holes costs no lseek a block, and with a
// hint no system call at all.
func (p *Path) holesOf(src any) *os.File {
	if !p.cfg.zeroBlocks {
		return nil
	}
	holes, known := false, false
	if h, ok := src.(HoleHinter); ok {
		holes, known = h.MayHaveHoles()
	}
	if known && !holes {
		return nil
	}
	var f *os.File
	switch s := src.(type) {
	case *os.File:
		f = s
	case FileSource:
		f = s.File()
	}
	if f == nil || !known && !hasHoles(f) {
		return nil
	}
	return f
}

// An UnreadCounter is a SendFile src that is told of the bytes sent as
// blocks of zeros, which it is not asked to read (kermit counts them as
// progress).
type UnreadCounter interface {
	Unread(n int64)
}

// zeroBlock returns a frame that stands for l zero bytes of file id at
// pos, with no payload, and the CRC-32C of those bytes; src, not read,
// is told of them (UnreadCounter).
func (p *Path) zeroBlock(src io.ReaderAt, id uint32, pos, l int64) (*frame, uint32) {
	c := framing.ZerosCRC32C(l)
	f := p.getFrame(1)
	f.payload = f.payload[:0]
	framing.BlockHeader{Flags: framing.BlockFlagZeros, FileID: id, Offset: uint64(pos), Length: uint32(l), PayloadCRC: c}.Put(f.hdr())
	p.stats.zeroBytesSent.Add(l)
	if u, ok := src.(UnreadCounter); ok {
		u.Unread(l) // not read, but passed
	}
	return f, c
}

// readZeros takes the block of zeros whose header is h (no payload
// follows): checked, and delivered as a frame of its header alone, kept
// so (parked, queued, or dropped as a duplicate) until it is written,
// when its zeros are written from zeroBuf as any block's bytes are (a
// sparse receive leaves a hole).
func (s *stream) readZeros(h framing.BlockHeader) error {
	p := s.p
	if !p.cfg.zeroBlocks {
		return s.protocolError("file %d offset %d: a block of zeros, but they were not agreed", h.FileID, h.Offset)
	}
	if h.PayloadCRC != framing.ZerosCRC32C(int64(h.Length)) {
		return s.protocolError("file %d offset %d: a block of %d zeros whose check is not theirs", h.FileID, h.Offset, h.Length)
	}
	f := p.getFrame(1)
	f.payload = f.payload[:0]
	f.h = h
	p.stats.zeroBytesReceived.Add(int64(h.Length))
	return s.deliver(f)
}

// held is what a received frame counts against its file's queue: its
// payload, or for a block of zeros the buffer it holds.
func (f *frame) held() int {
	if f.h.Flags&framing.BlockFlagZeros != 0 {
		return f.payloadCap()
	}
	return len(f.payload)
}

// zeroBuf is what blocks of zeros are written from. Never written to:
// io.WriterAt may not change what it is given.
var zeroBuf = make([]byte, 1<<20)

// ZeroSkipper is an optional extension of a file's destination: it
// takes n zero bytes at off without being given them, where it can (a
// sparse file leaves a hole), and says whether it did; if not, they are
// written as any bytes are. A sparse store would otherwise look at each
// of a block of zeros' bytes only to skip them (50 us a MiB).
type ZeroSkipper interface {
	SkipZerosAt(off, n int64) (bool, error)
}

// writeZeros writes n zero bytes to dst at off.
func writeZeros(dst io.WriterAt, off, n int64) error {
	if z, ok := dst.(ZeroSkipper); ok {
		if done, err := z.SkipZerosAt(off, n); done || err != nil {
			return err
		}
	}
	for n > 0 {
		k := min(n, int64(len(zeroBuf)))
		if _, err := dst.WriteAt(zeroBuf[:k], off); err != nil {
			return err
		}
		off, n = off+k, n-k
	}
	return nil
}
