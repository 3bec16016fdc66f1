package datachan

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"

	"kerf/framing"
)

// Compressed blocks (framing.CompressedPrefix; docs/protocol-datachan.md
// §2): a Path made WithCompression compresses every block it sends with
// zstd when that makes it at least 1/32 smaller, and sends it as it is
// otherwise, so incompressible data costs one trial per block and no
// bytes, and decodes the compressed blocks it receives. Compression is
// agreed for both directions (control's extension field Z): a Path
// made without it takes a compressed block for a protocol error.

// minSaving: a block is sent compressed only if that saves at least
// len/minSaving bytes; less would cost the receiver a decode for nothing.
const minSaving = 32

var (
	encoderOnce sync.Once
	encoder     *zstd.Encoder
	decoderOnce sync.Once
	decoder     *zstd.Decoder
)

// blockEncoder is the process's zstd encoder, shared by every Path
// (EncodeAll may be called concurrently). The fastest level: on a link
// slow enough to gain from compression a core still compresses at
// several hundred MB/s, and a frame's own checksum is left out, since
// the prefix's CRC-32C checks the decoded bytes.
func blockEncoder() *zstd.Encoder {
	encoderOnce.Do(func() {
		var err error
		encoder, err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderCRC(false),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
		if err != nil {
			panic(fmt.Sprintf("datachan: zstd encoder: %v", err)) // fixed options
		}
	})
	return encoder
}

// blockDecoder is the process's zstd decoder. It decodes into the
// caller's buffer and never past its capacity (a frame that claims more
// than the prefix's length fails), so a hostile block cannot make it
// allocate beyond framing.MaxBlockLen.
func blockDecoder() *zstd.Decoder {
	decoderOnce.Do(func() {
		var err error
		decoder, err = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithDecoderMaxMemory(framing.MaxBlockLen),
			zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			panic(fmt.Sprintf("datachan: zstd decoder: %v", err)) // fixed options
		}
	})
	return decoder
}

// WithCompression makes the Path compress the blocks it sends and
// accept compressed ones (see above): for a peer that agreed to it, in
// the control connection's extension field. It also turns off
// sendfile, since the bytes must pass through memory anyway.
func WithCompression(on bool) Option {
	return func(c *config) { c.compress = on }
}

// sealBlock puts the header of f, a frame holding bytes [off,
// off+len(f.payload)) of file id, and returns the frame to send, f
// itself or (with compression, where it pays) a compressed copy, and the
// CRC-32C of the file bytes.
func (p *Path) sealBlock(f *frame, id uint32, off int64) (*frame, uint32) {
	raw := f.payload
	c := framing.CRC32C(raw)
	if p.cfg.compress {
		if z := p.compressBlock(raw, c); z != nil {
			framing.BlockHeader{Flags: framing.BlockFlagCompressed, FileID: id, Offset: uint64(off),
				Length: uint32(len(z.payload)), PayloadCRC: framing.CRC32C(z.payload)}.Put(z.hdr())
			p.putFrame(f)
			return z, c
		}
	}
	framing.BlockHeader{FileID: id, Offset: uint64(off), Length: uint32(len(raw)), PayloadCRC: c}.Put(f.hdr())
	return f, c
}

// compressBlock returns a frame whose payload is raw compressed (prefix
// and zstd frame), or nil if that would not save enough.
func (p *Path) compressBlock(raw []byte, crc uint32) *frame {
	enc := blockEncoder()
	// Room for the worst case, so EncodeAll never reallocates, but no
	// more than a block may carry: output that does not fit there would
	// not have saved enough anyway (the check below).
	z := p.getFrame(min(framing.CompressedPrefixLen+enc.MaxEncodedSize(len(raw)), framing.MaxBlockLen))
	framing.CompressedPrefix{Length: uint32(len(raw)), CRC: crc}.Put(z.payload)
	out := enc.EncodeAll(raw, z.payload[framing.CompressedPrefixLen:framing.CompressedPrefixLen])
	n := framing.CompressedPrefixLen + len(out)
	if n > len(raw)-len(raw)/minSaving || n > len(z.payload) {
		p.putFrame(z)
		return nil
	}
	z.payload = z.payload[:n]
	p.stats.compressedBlocks.Add(1)
	return z
}

// decompressBlock decodes the payload of f, a compressed block h whose
// payload check passed, into a new frame of the file bytes, and returns
// it with the header that describes them as an uncompressed block would.
// It consumes f. An error means the sender compressed wrongly: the bytes
// arrived as sent.
func (p *Path) decompressBlock(f *frame, h framing.BlockHeader) (*frame, framing.BlockHeader, error) {
	defer p.putFrame(f)
	pre, err := framing.ParseCompressedPrefix(f.payload)
	if err != nil {
		return nil, h, err
	}
	if lim := p.cfg.receiveLimit(); int(pre.Length) > lim {
		return nil, h, fmt.Errorf("stands for %d bytes, more than this receiver takes in a block (%d)", pre.Length, lim)
	}
	out := p.getFrame(int(pre.Length))
	got, err := blockDecoder().DecodeAll(f.payload[framing.CompressedPrefixLen:], out.payload[:0:pre.Length])
	if err != nil {
		err = fmt.Errorf("zstd frame standing for %d bytes: %w", pre.Length, err)
	} else if len(got) != int(pre.Length) {
		err = fmt.Errorf("decodes to %d bytes, prefix says %d", len(got), pre.Length)
	} else if framing.CRC32C(got) != pre.CRC {
		err = fmt.Errorf("decoded bytes fail the prefix's CRC-32C %08x", pre.CRC)
	}
	if err != nil {
		p.putFrame(out)
		return nil, h, err
	}
	p.stats.compressedReceived.Add(1)
	return out, framing.BlockHeader{FileID: h.FileID, Offset: h.Offset, Length: pre.Length, PayloadCRC: pre.CRC}, nil
}
