package datachan

import (
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

// holesOf returns the file under src if the Path sends blocks of zeros
// and the file has holes (fewer blocks allocated than its size needs),
// else nil: a file without holes costs no lseek a block.
func (p *Path) holesOf(src any) *os.File {
	if !p.cfg.zeroBlocks {
		return nil
	}
	var f *os.File
	switch s := src.(type) {
	case *os.File:
		f = s
	case FileSource:
		f = s.File()
	}
	if f == nil || !hasHoles(f) {
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
// pos, with no payload, and the CRC-32C of those bytes.
func (p *Path) zeroBlock(id uint32, pos, l int64) (*frame, uint32) {
	c := framing.ZerosCRC32C(l)
	f := p.getFrame(1)
	f.payload = f.payload[:0]
	framing.BlockHeader{Flags: framing.BlockFlagZeros, FileID: id, Offset: uint64(pos), Length: uint32(l), PayloadCRC: c}.Put(f.hdr())
	p.stats.zeroBytesSent.Add(l)
	return f, c
}

// readZeros takes the block of zeros whose header is h (no payload
// follows): checked, and delivered as a frame of zeros, which the file's
// store writes as it writes any (a sparse receive leaves a hole).
func (s *stream) readZeros(h framing.BlockHeader) error {
	p := s.p
	if !p.cfg.zeroBlocks {
		return s.protocolError("file %d offset %d: a block of zeros, but they were not agreed", h.FileID, h.Offset)
	}
	if h.PayloadCRC != framing.ZerosCRC32C(int64(h.Length)) {
		return s.protocolError("file %d offset %d: a block of %d zeros whose check is not theirs", h.FileID, h.Offset, h.Length)
	}
	f := p.getFrame(int(h.Length))
	clear(f.payload)
	h.Flags &^= framing.BlockFlagZeros
	f.h = h
	p.stats.zeroBytesReceived.Add(int64(h.Length))
	return s.deliver(f)
}
