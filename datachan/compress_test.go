package datachan

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"kerf/framing"
)

// textData is compressible: lines of words, like logs or source.
func textData(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		b.WriteString("2026-11-30T12:00:00Z kerf moved file number ")
		b.WriteString(strings.Repeat("x", i%17))
		b.WriteString(" without trouble\n")
	}
	return b.Bytes()[:n]
}

func TestCompressedTransfer(t *testing.T) {
	for _, tc := range []struct {
		name           string
		data           []byte
		blockSize      int
		streams        int
		wantCompressed bool
	}{
		{"text, many blocks, two streams", textData(3<<20 + 123), 256 << 10, 2, true},
		{"text, one block", textData(50_000), 1 << 20, 1, true},
		{"random stays as it is", randomData(1, 2<<20), 256 << 10, 2, false},
		{"zeros", make([]byte, 5<<20), 1 << 20, 3, true},
		// The worst-case room for a 16 MiB block is more than a block:
		// getFrame's largest class was indexed past its end.
		{"text, largest blocks", textData(framing.MaxBlockLen + 100), framing.MaxBlockLen, 1, true},
		{"random, largest blocks", randomData(2, framing.MaxBlockLen+100), framing.MaxBlockLen, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, r := pathPair(t, tc.streams, nil, WithBlockSize(tc.blockSize), WithCompression(true))
			transfer(t, s, r, 1, tc.data)
			ss, rs := s.Stats(), r.Stats()
			if got := ss.CompressedBlocks > 0; got != tc.wantCompressed {
				t.Fatalf("sender compressed %d blocks, want some: %v", ss.CompressedBlocks, tc.wantCompressed)
			}
			if rs.CompressedReceived != ss.CompressedBlocks {
				t.Fatalf("receiver decoded %d compressed blocks, sender sent %d", rs.CompressedReceived, ss.CompressedBlocks)
			}
			if rs.BytesReceived != int64(len(tc.data)) {
				t.Fatalf("receiver counts %d file bytes, want %d", rs.BytesReceived, len(tc.data))
			}
			if tc.wantCompressed && ss.BytesSent >= int64(len(tc.data))/2 {
				t.Fatalf("sent %d bytes for %d of compressible data", ss.BytesSent, len(tc.data))
			}
			if !tc.wantCompressed && ss.BytesSent != int64(len(tc.data)) {
				t.Fatalf("sent %d bytes for %d incompressible ones", ss.BytesSent, len(tc.data))
			}
		})
	}
}

// Without WithCompression nothing is compressed, however compressible.
func TestNoCompressionUnlessAsked(t *testing.T) {
	s, r := pathPair(t, 1, nil)
	transfer(t, s, r, 1, textData(1<<20))
	if n := s.Stats().CompressedBlocks; n != 0 {
		t.Fatalf("%d blocks compressed", n)
	}
}

// Small files batched into one write are compressed one by one.
func TestCompressedSmallFilesBatched(t *testing.T) {
	s, r := pathPair(t, 2, nil, WithSmallFileBatching(true), WithCompression(true))
	ctx := testContext(t)
	const n = 40
	files := make([][]byte, n)
	dsts := make([]*memFile, n)
	for i := range files {
		if i%2 == 0 {
			files[i] = textData(1000 + 300*i)
		} else {
			files[i] = randomData(uint64(i), 1000+300*i)
		}
		dsts[i] = newMemFile(len(files[i]))
		if err := r.Expect(uint32(i+1), dsts[i], 0, int64(len(files[i]))); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range files {
		if _, err := s.SendFile(ctx, uint32(i+1), bytes.NewReader(f), 0, int64(len(f))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		crc, err := r.Wait(ctx, uint32(i+1))
		if err != nil {
			t.Fatal(err)
		}
		if crc != framing.CRC32C(f) || !bytes.Equal(dsts[i].bytes(), f) {
			t.Fatalf("file %d differs", i+1)
		}
	}
	if got := s.Stats().CompressedBlocks; got != n/2 {
		t.Fatalf("%d blocks compressed, want the %d text files", got, n/2)
	}
}

// A compressed block damaged on the way is asked for again as "the
// block at this offset" (its length is in the damaged payload), and the
// sender cuts the same block again.
func TestDamagedCompressedBlockIsResent(t *testing.T) {
	rec := &resendRecorder{}
	wrap := func(i int, c net.Conn) net.Conn {
		rec.Conn = &damageConn{Conn: c, block: 3, damage: new(damage)}
		return rec
	}
	s, r := pathPair(t, 1, wrap, WithBlockSize(64<<10), WithCompression(true))
	data := textData(1 << 20)
	transfer(t, s, r, 1, data)
	ss, rs := s.Stats(), r.Stats()
	if rs.BadBlocks != 1 || ss.BlocksResent != 1 {
		t.Fatalf("bad blocks %d, resent %d; want 1 and 1", rs.BadBlocks, ss.BlocksResent)
	}
	if got := rec.got(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("resend requests of lengths %v, want one of length 0", got)
	}
	if ss.CompressedBlocks != ss.BlocksSent {
		t.Fatalf("%d of %d blocks compressed; the resent one should be too", ss.CompressedBlocks, ss.BlocksSent)
	}
}

// resendRecorder notes the length field of each resend request written
// on the connection (one 32-byte frame per Write, as writeLoop writes).
type resendRecorder struct {
	net.Conn
	mu      sync.Mutex
	lengths []uint32
}

func (c *resendRecorder) Write(p []byte) (int, error) {
	if len(p) == framing.FrameLen && string(p[:4]) == framing.ResendMagic {
		c.mu.Lock()
		c.lengths = append(c.lengths, binary.BigEndian.Uint32(p[20:24]))
		c.mu.Unlock()
	}
	return c.Conn.Write(p)
}

func (c *resendRecorder) got() []uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lengths)
}

// A resend of length 0 names a block by where it starts: any other
// offset is refused.
func TestResendOfTheBlockAt(t *testing.T) {
	src := &source{ranges: [][2]int64{{100, 1000}, {5000, 5001}}}
	for _, tc := range []struct{ off, want int64 }{
		{100, 356}, {356, 612}, {868, 1000}, {5000, 5001},
		{101, 0}, {1000, 0}, {0, 0}, {4999, 0},
	} {
		if got := src.blockEnd(tc.off, 256); got != tc.want {
			t.Errorf("blockEnd(%d) = %d, want %d", tc.off, got, tc.want)
		}
	}
}

// The golden compressed block was made by the reference zstd tool
// (framing/testdata/blocks/gen.py): kerf's decoder reads another
// implementation's frames.
func TestDecompressGoldenBlock(t *testing.T) {
	g := readGoldenFile(t, "../framing/testdata/blocks/compressed-zstd.txt")
	wire, _ := hex.DecodeString(g["hex"])
	payload, _ := hex.DecodeString(g["payload"])
	raw, _ := hex.DecodeString(g["raw"])
	h, err := framing.ParseBlockHeader(wire)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.CheckPayload(payload); err != nil {
		t.Fatal(err)
	}
	p := &Path{}
	f := p.getFrame(len(payload))
	copy(f.payload, payload)
	out, oh, err := p.decompressBlock(f, h)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.payload, raw) {
		t.Fatalf("decoded %q, want %q", out.payload, raw)
	}
	want := framing.BlockHeader{FileID: h.FileID, Offset: h.Offset, Length: uint32(len(raw)), PayloadCRC: framing.CRC32C(raw)}
	if oh != want {
		t.Fatalf("header %+v, want %+v", oh, want)
	}
}

func readGoldenFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		g[k] = v
	}
	return g
}

// compressedPayload builds the payload of a compressed block standing
// for raw, with the prefix's fields as given.
// writeCompressedBlock writes raw, compressed, as block off of file id
// on c, its prefix and header right.
func writeCompressedBlock(t *testing.T, c net.Conn, id uint32, off uint64, raw []byte) {
	t.Helper()
	payload := compressedPayload(uint32(len(raw)), framing.CRC32C(raw), raw)
	frame := make([]byte, framing.BlockHeaderLen+len(payload))
	copy(frame[framing.BlockHeaderLen:], payload)
	framing.BlockHeader{Flags: framing.BlockFlagCompressed, FileID: id, Offset: off, Length: uint32(len(payload)), PayloadCRC: framing.CRC32C(payload)}.Put(frame)
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
}

func compressedPayload(length, crc uint32, raw []byte) []byte {
	b := make([]byte, framing.CompressedPrefixLen)
	framing.CompressedPrefix{Length: length, CRC: crc}.Put(b)
	return blockEncoder().EncodeAll(raw, b)
}

// Blocks that pass their payload check but were compressed wrongly are
// refused, and decoding never writes past what the prefix announced.
func TestDecompressRefusesLies(t *testing.T) {
	raw := textData(10_000)
	crc := framing.CRC32C(raw)
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"says fewer bytes", compressedPayload(9_999, crc, raw), "zstd frame standing for 9999 bytes"},
		{"says more bytes", compressedPayload(10_001, crc, raw), "decodes to 10000 bytes"},
		{"wrong CRC", compressedPayload(10_000, crc^1, raw), "CRC-32C"},
		{"not zstd", append(compressedPayload(10, 0, nil)[:8], []byte("plain text, not a zstd frame")...), "zstd frame"},
		{"no frame", compressedPayload(10, 0, nil)[:8], "prefix"},
		{"stands for too much", compressedPayload(framing.MaxBlockLen+1, crc, raw), "prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Path{}
			f := p.getFrame(len(tc.payload))
			copy(f.payload, tc.payload)
			h := framing.BlockHeader{Flags: framing.BlockFlagCompressed, FileID: 1, Length: uint32(len(tc.payload)), PayloadCRC: framing.CRC32C(tc.payload)}
			_, _, err := p.decompressBlock(f, h)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A well-framed compressed block that does not decode fails the Path
// with a protocol error: the bytes arrived as sent, so asking again
// would bring the same.
func TestUndecodableBlockFailsPath(t *testing.T) {
	payload := append(compressedPayload(100, 0, nil)[:8], "not zstd at all"...)
	err := receiveCompressedBlock(t, 100, payload, WithCompression(true))
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("Wait: %v, want a protocol error", err)
	}
	wantErrContaining(t, err, "does not decode")
}

// receiveCompressedBlock writes one compressed block of file 1 (size
// bytes long) with payload, its checks right, straight onto a
// connection of a receiving Path made with opts, and returns what
// waiting for the file gives.
func receiveCompressedBlock(t *testing.T, size int, payload []byte, opts ...Option) error {
	t.Helper()
	cc, sc := pairedConns(t, 1)
	r := NewPath(sc, opts...)
	defer r.Close()
	defer cc[0].Close()
	if err := r.Expect(1, newMemFile(size), 0, int64(size)); err != nil {
		t.Fatal(err)
	}
	var hdr [framing.BlockHeaderLen]byte
	framing.BlockHeader{Flags: framing.BlockFlagCompressed, FileID: 1, Length: uint32(len(payload)), PayloadCRC: framing.CRC32C(payload)}.Put(hdr[:])
	if _, err := cc[0].Write(append(hdr[:], payload...)); err != nil {
		t.Fatal(err)
	}
	_, err := r.Wait(testContext(t), 1)
	return err
}

// A compressed block to a Path that did not agree to compression (a
// server that refused it) is a protocol error, not decoded.
func TestCompressedBlockNotAgreedFailsPath(t *testing.T) {
	raw := textData(5000)
	err := receiveCompressedBlock(t, len(raw), compressedPayload(uint32(len(raw)), framing.CRC32C(raw), raw))
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("Wait: %v, want a protocol error", err)
	}
	wantErrContaining(t, err, "compression was not agreed")
}

func FuzzDecompressBlock(f *testing.F) {
	f.Add(compressedPayload(10_000, framing.CRC32C(textData(10_000)), textData(10_000)))
	f.Add(compressedPayload(3, framing.CRC32C([]byte("abc")), []byte("abc")))
	f.Add([]byte{0, 0, 0, 5, 0, 0, 0, 0, 0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, payload []byte) {
		p := &Path{}
		fr := p.getFrame(max(len(payload), 1))
		fr.payload = fr.payload[:copy(fr.payload, payload)]
		h := framing.BlockHeader{Flags: framing.BlockFlagCompressed, FileID: 1, Length: uint32(len(payload))}
		out, oh, err := p.decompressBlock(fr, h)
		if err != nil {
			return
		}
		// What decodes is exactly what the prefix announced.
		pre, _ := framing.ParseCompressedPrefix(payload)
		if oh.Length != pre.Length || len(out.payload) != int(pre.Length) || framing.CRC32C(out.payload) != pre.CRC || oh.Flags != 0 {
			t.Fatalf("decoded %d bytes as %+v from prefix %+v", len(out.payload), oh, pre)
		}
	})
}

// BenchmarkCompressBlock is one 1 MiB block of log-like text through
// sealBlock and decompressBlock: the CPU cost of --compress per byte.
func BenchmarkCompressBlock(b *testing.B) {
	raw := textData(1 << 20)
	p := &Path{cfg: config{compress: true}}
	b.Run("seal", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			f := p.getFrame(len(raw))
			copy(f.payload, raw)
			z, _ := p.sealBlock(f, 1, 0)
			p.putFrame(z)
		}
	})
	f := p.getFrame(len(raw))
	copy(f.payload, raw)
	z, _ := p.sealBlock(f, 1, 0)
	h, _ := framing.ParseBlockHeader(z.hdr())
	wire := bytes.Clone(z.payload)
	b.Logf("1 MiB of text in %d bytes", len(wire))
	b.Run("open", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			f := p.getFrame(len(wire))
			copy(f.payload, wire)
			out, _, err := p.decompressBlock(f, h)
			if err != nil {
				b.Fatal(err)
			}
			p.putFrame(out)
		}
	})
}

// A compressed block of a file not expected yet is parked as it came and
// decoded only once its file is expected: blocks of files a peer never
// announces cost no decoding (a 500-byte block can stand for 16 MiB of
// zeros, and every one used to be decoded on arrival).
func TestEarlyCompressedBlockDecodedOnlyWhenExpected(t *testing.T) {
	cc, sc := pairedConns(t, 1)
	r := NewPath(sc, WithCompression(true))
	defer r.Close()
	defer cc[0].Close()
	raw := make([]byte, 4<<20)
	copy(raw, "not all zeros")
	for id := uint32(1); id <= 20; id++ {
		writeCompressedBlock(t, cc[0], id, 0, raw)
	}
	waitFor(t, func() bool { return r.Stats().Parked == 20 })
	if n := r.Stats().CompressedReceived; n != 0 {
		t.Fatalf("%d blocks of files not expected were decoded", n)
	}
	dst := newMemFile(len(raw))
	if err := r.Expect(7, dst, 0, int64(len(raw))); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(testContext(t), 7); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst.bytes(), raw) {
		t.Fatal("the parked block's file differs")
	}
	if n := r.Stats().CompressedReceived; n != 1 {
		t.Fatalf("%d blocks decoded, want the expected file's one", n)
	}
}

// Compressed blocks of a file not expected yet, beyond the park, are
// remembered undecoded: what length each stands for is unknown, so each
// is asked for again as "the block at" its offset once the file is
// expected, and the file arrives whole.
func TestDeferredCompressedBlocksAskedAgain(t *testing.T) {
	s, r := pathPair(t, 1, nil, WithBlockSize(1024), WithParkLimit(0), WithCompression(true))
	sendThenExpect(t, s, r, textData(10_000), func(st Stats) bool { return st.Deferred == 10 }, func() {
		if st := r.Stats(); st.CompressedReceived != 0 {
			t.Fatalf("blocks of a file not expected were decoded: %+v", st)
		}
	})
	if st := s.Stats(); st.BlocksResent != 10 {
		t.Fatalf("want the 10 deferred blocks sent again: %+v", st)
	}
}

// A parked compressed block that does not decode fails the path when its
// file comes to be expected, as it would have on arrival.
func TestParkedUndecodableBlockFailsAtExpect(t *testing.T) {
	cc, sc := pairedConns(t, 1)
	r := NewPath(sc, WithCompression(true))
	defer r.Close()
	defer cc[0].Close()
	payload := append(compressedPayload(100, 0, nil)[:8], "not zstd at all"...)
	frame := make([]byte, framing.BlockHeaderLen+len(payload))
	copy(frame[framing.BlockHeaderLen:], payload)
	framing.BlockHeader{Flags: framing.BlockFlagCompressed, FileID: 3, Length: uint32(len(payload)), PayloadCRC: framing.CRC32C(payload)}.Put(frame)
	if _, err := cc[0].Write(frame); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return r.Stats().Parked == 1 })
	err := r.Expect(3, newMemFile(100), 0, 100)
	if err == nil {
		_, err = r.Wait(testContext(t), 3)
	}
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "does not decode") {
		t.Fatalf("Expect/Wait: %v, want a protocol error", err)
	}
}
