package framing

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Data-channel frames.
//
// A data connection carries 32-byte frames in each direction. Every frame
// starts with a 4-byte magic that says what it is, carries version 1 in
// byte 4, and ends with a CRC-32C of its first 28 bytes, so a damaged or
// misaligned frame is always detected. All integers are big-endian.
//
// Block (sender to receiver), followed by Length payload bytes:
//
//	0-3   magic "KRFB"
//	4     version (1)
//	5     flags: bit 0 = payload compressed (see CompressedPrefix),
//	      bit 1 = zeros: no payload follows, the Length file bytes are
//	      zeros (a hole in a sparse file), and the CRC is of that many
//	      zero bytes (ZerosCRC32C); only to a peer that agreed (control:
//	      ";H"), never with bit 0; bits 2-7 zero
//	6-7   reserved, zero
//	8-11  file id
//	12-19 offset of the payload in the file
//	20-23 payload length (at most MaxBlockLen)
//	24-27 CRC-32C of the payload
//	28-31 CRC-32C of bytes 0-27
//
// Resend request (receiver to sender), no payload: the block
// [offset, offset+length) of file id arrived with a bad payload check and
// must be sent again, with the same offset and length.
//
//	0-3   magic "KRFN"
//	4     version (1)
//	5     flags: bit 0 = stop (ResendFlagStop): not a resend but "send
//	      nothing more of file id" (its receiver failed it: a write
//	      failed, the disk is full), offset and length zero; only to a
//	      peer that agreed (control: ";S"); bits 1-7 zero
//	6-7   zero
//	8-11  file id
//	12-19 offset
//	20-23 length (1..MaxBlockLen), or 0: "the block you sent at this
//	      offset, as you cut it" (a compressed block whose check failed
//	      cannot say how many file bytes it stood for)
//	24-27 zero
//	28-31 CRC-32C of bytes 0-27
//
// A frame whose header check fails cannot be trusted to say how long its
// payload is, so a receiver cannot find the next frame: a bad header
// ends the data connection.
const (
	BlockHeaderLen = 32       // bytes in a block header and in every other frame
	FrameLen       = 32       // bytes in a control frame (resend request)
	MaxBlockLen    = 16 << 20 // largest block payload
	BlockVersion   = 1        // version byte of every frame

	BlockMagic  = "KRFB" // a block of file data
	ResendMagic = "KRFN" // a resend request

	ResendFlagStop = 1 << 0 // a stop request: send no more of the file

	BlockFlagCompressed = 1 << 0 // payload is a CompressedPrefix and a zstd frame
	BlockFlagZeros      = 1 << 1 // no payload: Length bytes of zeros
	blockFlagsKnown     = BlockFlagCompressed | BlockFlagZeros
)

// Sentinel errors of ParseBlockHeader and ParseResendRequest; they are
// returned wrapped with detail.
var (
	ErrBlockShort        = errors.New("framing: block frame shorter than 32 bytes")
	ErrBlockMagic        = errors.New("framing: bad block frame magic")
	ErrBlockHeaderCheck  = errors.New("framing: bad block header check")
	ErrBlockVersion      = errors.New("framing: unsupported block frame version")
	ErrBlockReserved     = errors.New("framing: reserved block frame bits set")
	ErrBlockTooLong      = errors.New("framing: block payload too long")
	ErrBlockPayloadCheck = errors.New("framing: bad block payload check")
	ErrCompressedPrefix  = errors.New("framing: bad compressed block prefix")
)

// BlockHeader is the decoded header of a data-channel block.
type BlockHeader struct {
	Flags      byte   // BlockFlag bits
	FileID     uint32 // the DataPath file id
	Offset     uint64 // where the payload goes in the file
	Length     uint32 // payload bytes following the header
	PayloadCRC uint32 // CRC-32C of the payload
}

// Put writes h in wire form, with its header check, to b[:32].
func (h BlockHeader) Put(b []byte) {
	_ = b[BlockHeaderLen-1]
	copy(b[0:4], BlockMagic)
	b[4] = BlockVersion
	b[5] = h.Flags
	b[6], b[7] = 0, 0
	binary.BigEndian.PutUint32(b[8:12], h.FileID)
	binary.BigEndian.PutUint64(b[12:20], h.Offset)
	binary.BigEndian.PutUint32(b[20:24], h.Length)
	binary.BigEndian.PutUint32(b[24:28], h.PayloadCRC)
	putFrameCheck(b)
}

// ParseBlockHeader decodes the block header in b[:32]. It checks, in this
// order, the magic, the header check, the version, the reserved bits and
// the length limit.
func ParseBlockHeader(b []byte) (BlockHeader, error) {
	if err := checkFrame(b, BlockMagic); err != nil {
		return BlockHeader{}, err
	}
	h := BlockHeader{
		Flags:      b[5],
		FileID:     binary.BigEndian.Uint32(b[8:12]),
		Offset:     binary.BigEndian.Uint64(b[12:20]),
		Length:     binary.BigEndian.Uint32(b[20:24]),
		PayloadCRC: binary.BigEndian.Uint32(b[24:28]),
	}
	if h.Flags&^blockFlagsKnown != 0 || h.Flags == BlockFlagCompressed|BlockFlagZeros || b[6] != 0 || b[7] != 0 {
		return BlockHeader{}, fmt.Errorf("%w: flags %#02x, reserved %#02x%02x", ErrBlockReserved, h.Flags, b[6], b[7])
	}
	if h.Length > MaxBlockLen {
		return BlockHeader{}, fmt.Errorf("%w: %d bytes", ErrBlockTooLong, h.Length)
	}
	return h, nil
}

// CheckPayload reports ErrBlockPayloadCheck (wrapped) if p is not the
// payload h describes.
func (h BlockHeader) CheckPayload(p []byte) error {
	if uint32(len(p)) != h.Length || len(p) > MaxBlockLen {
		return fmt.Errorf("%w: %d bytes, header says %d", ErrBlockPayloadCheck, len(p), h.Length)
	}
	if c := CRC32C(p); c != h.PayloadCRC {
		return fmt.Errorf("%w: file %d offset %d: crc %08x, header says %08x", ErrBlockPayloadCheck, h.FileID, h.Offset, c, h.PayloadCRC)
	}
	return nil
}

// ResendRequest asks the sender to send block [Offset, Offset+Length) of
// file FileID again, or, with Stop, to send nothing more of it (Offset
// and Length zero): the receiver failed the file, and the rest of it
// would cross for nothing.
type ResendRequest struct {
	FileID uint32
	Offset uint64
	Length uint32
	Stop   bool
}

// Put writes r in wire form, with its check, to b[:32].
func (r ResendRequest) Put(b []byte) {
	_ = b[FrameLen-1]
	clear(b[:FrameLen])
	copy(b[0:4], ResendMagic)
	b[4] = BlockVersion
	binary.BigEndian.PutUint32(b[8:12], r.FileID)
	binary.BigEndian.PutUint64(b[12:20], r.Offset)
	binary.BigEndian.PutUint32(b[20:24], r.Length)
	if r.Stop {
		b[5] = ResendFlagStop
	}
	putFrameCheck(b)
}

// ParseResendRequest decodes the resend request in b[:32].
func ParseResendRequest(b []byte) (ResendRequest, error) {
	if err := checkFrame(b, ResendMagic); err != nil {
		return ResendRequest{}, err
	}
	if b[5]&^ResendFlagStop != 0 || b[6] != 0 || b[7] != 0 || binary.BigEndian.Uint32(b[24:28]) != 0 {
		return ResendRequest{}, fmt.Errorf("%w in resend request", ErrBlockReserved)
	}
	r := ResendRequest{
		FileID: binary.BigEndian.Uint32(b[8:12]),
		Offset: binary.BigEndian.Uint64(b[12:20]),
		Length: binary.BigEndian.Uint32(b[20:24]),
		Stop:   b[5] == ResendFlagStop,
	}
	if r.Stop && (r.Offset != 0 || r.Length != 0) {
		return ResendRequest{}, fmt.Errorf("%w: stop request with offset %d, length %d", ErrBlockReserved, r.Offset, r.Length)
	}
	if r.Length > MaxBlockLen {
		return ResendRequest{}, fmt.Errorf("%w: resend of %d bytes", ErrBlockTooLong, r.Length)
	}
	return r, nil
}

// CompressedPrefixLen is the size of a CompressedPrefix.
const CompressedPrefixLen = 8

// CompressedPrefix opens the payload of a compressed block (flag bit 0):
// the file bytes the block stands for, [Offset, Offset+Length), and
// their CRC-32C, then one zstd frame (RFC 8878) of exactly those bytes.
// The block header's Length and PayloadCRC describe the payload as sent
// (prefix and frame), so damage is found before anything is decoded;
// CRC checks what decoding gives and is the one the whole-file check
// combines.
//
//	0-3  Length: file bytes, 1..MaxBlockLen
//	4-7  CRC: CRC-32C of those bytes
type CompressedPrefix struct {
	Length uint32
	CRC    uint32
}

// Put writes c to b[:8].
func (c CompressedPrefix) Put(b []byte) {
	_ = b[CompressedPrefixLen-1]
	binary.BigEndian.PutUint32(b[0:4], c.Length)
	binary.BigEndian.PutUint32(b[4:8], c.CRC)
}

// ParseCompressedPrefix decodes the prefix at the start of payload, a
// compressed block's payload, which must also hold at least one byte of
// compressed data.
func ParseCompressedPrefix(payload []byte) (CompressedPrefix, error) {
	if len(payload) <= CompressedPrefixLen {
		return CompressedPrefix{}, fmt.Errorf("%w: payload of %d bytes", ErrCompressedPrefix, len(payload))
	}
	c := CompressedPrefix{
		Length: binary.BigEndian.Uint32(payload[0:4]),
		CRC:    binary.BigEndian.Uint32(payload[4:8]),
	}
	if c.Length == 0 || c.Length > MaxBlockLen {
		return CompressedPrefix{}, fmt.Errorf("%w: stands for %d bytes", ErrCompressedPrefix, c.Length)
	}
	return c, nil
}

// putFrameCheck stores the CRC-32C of b[0:28] in b[28:32].
func putFrameCheck(b []byte) {
	binary.BigEndian.PutUint32(b[28:32], CRC32C(b[0:28]))
}

// checkFrame verifies the length, magic, check and version shared by all
// frames.
func checkFrame(b []byte, magic string) error {
	if len(b) < FrameLen {
		return fmt.Errorf("%w: %d bytes", ErrBlockShort, len(b))
	}
	if string(b[0:4]) != magic {
		return fmt.Errorf("%w: %q, want %q", ErrBlockMagic, b[0:4], magic)
	}
	if want, got := CRC32C(b[0:28]), binary.BigEndian.Uint32(b[28:32]); want != got {
		return fmt.Errorf("%w: %08x, computed %08x", ErrBlockHeaderCheck, got, want)
	}
	if b[4] != BlockVersion {
		return fmt.Errorf("%w: %d", ErrBlockVersion, b[4])
	}
	return nil
}
