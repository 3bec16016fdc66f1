package framing

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// golden is one file of testdata/blocks: "key value" lines.
type golden map[string]string

func readGolden(t *testing.T, path string) golden {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := golden{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), " ")
		if !ok {
			t.Fatalf("%s: bad line %q", path, s.Text())
		}
		g[k] = v
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g golden) uint(t *testing.T, key string, base, bits int) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(g[key], base, bits)
	if err != nil {
		t.Fatalf("field %s: %v", key, err)
	}
	return v
}

var goldenErrs = map[string]error{
	"magic":       ErrBlockMagic,
	"headercheck": ErrBlockHeaderCheck,
	"version":     ErrBlockVersion,
	"reserved":    ErrBlockReserved,
	"toolong":     ErrBlockTooLong,
}

// TestGoldenFrames checks every frame in testdata/blocks (written by an
// independent generator, gen.py) against Put and Parse.
func TestGoldenFrames(t *testing.T) {
	paths, err := filepath.Glob("testdata/blocks/*.txt")
	if err != nil || len(paths) < 10 {
		t.Fatalf("golden files: %v, %d found", err, len(paths))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			g := readGolden(t, path)
			wire, err := hex.DecodeString(g["hex"])
			if err != nil || len(wire) != 32 {
				t.Fatalf("hex: %v (%d bytes)", err, len(wire))
			}
			var out [32]byte
			switch g["kind"] {
			case "block":
				h, err := ParseBlockHeader(wire)
				if e, ok := g["err"]; ok {
					if !errors.Is(err, goldenErrs[e]) {
						t.Fatalf("ParseBlockHeader error = %v, want %v", err, goldenErrs[e])
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				want := BlockHeader{
					Flags:      byte(g.uint(t, "flags", 10, 8)),
					FileID:     uint32(g.uint(t, "file", 10, 32)),
					Offset:     g.uint(t, "offset", 10, 64),
					Length:     uint32(g.uint(t, "length", 10, 32)),
					PayloadCRC: uint32(g.uint(t, "payloadcrc", 16, 32)),
				}
				if h != want {
					t.Fatalf("parsed %+v, want %+v", h, want)
				}
				want.Put(out[:])
				if !bytes.Equal(out[:], wire) {
					t.Fatalf("Put = %x, want %x", out, wire)
				}
				if p, ok := g["payload"]; ok {
					payload, _ := hex.DecodeString(p)
					if err := h.CheckPayload(payload); err != nil {
						t.Fatal(err)
					}
					if h.Flags&BlockFlagCompressed != 0 {
						c, err := ParseCompressedPrefix(payload)
						if err != nil {
							t.Fatal(err)
						}
						raw, _ := hex.DecodeString(g["raw"])
						want := CompressedPrefix{Length: uint32(len(raw)), CRC: uint32(g.uint(t, "rawcrc", 16, 32))}
						if c != want || CRC32C(raw) != want.CRC {
							t.Fatalf("prefix %+v, want %+v (CRC-32C of raw %08x)", c, want, CRC32C(raw))
						}
						var b [CompressedPrefixLen]byte
						want.Put(b[:])
						if !bytes.Equal(b[:], payload[:CompressedPrefixLen]) {
							t.Fatalf("prefix Put = %x, want %x", b, payload[:CompressedPrefixLen])
						}
					}
					payload[0] ^= 1
					if err := h.CheckPayload(payload); !errors.Is(err, ErrBlockPayloadCheck) {
						t.Fatalf("damaged payload: %v", err)
					}
				}
			case "resend":
				r, err := ParseResendRequest(wire)
				if e, ok := g["err"]; ok {
					if !errors.Is(err, goldenErrs[e]) {
						t.Fatalf("ParseResendRequest error = %v, want %v", err, goldenErrs[e])
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				want := ResendRequest{
					FileID: uint32(g.uint(t, "file", 10, 32)),
					Offset: g.uint(t, "offset", 10, 64),
					Length: uint32(g.uint(t, "length", 10, 32)),
					Stop:   g["stop"] == "1",
				}
				if r != want {
					t.Fatalf("parsed %+v, want %+v", r, want)
				}
				want.Put(out[:])
				if !bytes.Equal(out[:], wire) {
					t.Fatalf("Put = %x, want %x", out, wire)
				}
			default:
				t.Fatalf("unknown kind %q", g["kind"])
			}
		})
	}
}

func TestParseCompressedPrefix(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload []byte
		want    CompressedPrefix
		err     bool
	}{
		{"one byte of data", []byte{0, 0, 0, 1, 0xe3, 0x06, 0x92, 0x83, 0x28}, CompressedPrefix{1, 0xe3069283}, false},
		{"largest", []byte{0x01, 0, 0, 0, 0, 0, 0, 0, 0}, CompressedPrefix{MaxBlockLen, 0}, false},
		{"no data after the prefix", []byte{0, 0, 0, 1, 0, 0, 0, 0}, CompressedPrefix{}, true},
		{"short", []byte{0, 0, 1}, CompressedPrefix{}, true},
		{"stands for nothing", []byte{0, 0, 0, 0, 0, 0, 0, 0, 1}, CompressedPrefix{}, true},
		{"too long", []byte{0x01, 0, 0, 1, 0, 0, 0, 0, 1}, CompressedPrefix{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCompressedPrefix(tc.payload)
			if tc.err {
				if !errors.Is(err, ErrCompressedPrefix) {
					t.Fatalf("error %v, want ErrCompressedPrefix", err)
				}
				return
			}
			if err != nil || c != tc.want {
				t.Fatalf("got %+v, %v; want %+v", c, err, tc.want)
			}
		})
	}
}

func TestBlockHeaderRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var b [BlockHeaderLen]byte
	for range 10000 {
		h := BlockHeader{
			Flags:      byte(r.IntN(2)),
			FileID:     r.Uint32(),
			Offset:     r.Uint64(),
			Length:     uint32(r.IntN(MaxBlockLen + 1)),
			PayloadCRC: r.Uint32(),
		}
		h.Put(b[:])
		got, err := ParseBlockHeader(b[:])
		if err != nil || got != h {
			t.Fatalf("round trip of %+v: %+v, %v", h, got, err)
		}
		// Every single-bit error is caught by one of the checks.
		i := r.IntN(BlockHeaderLen)
		b[i] ^= 1 << r.IntN(8)
		if _, err := ParseBlockHeader(b[:]); err == nil {
			t.Fatalf("bit flip in byte %d not detected", i)
		}
	}
}

func TestParseBlockHeaderShort(t *testing.T) {
	var b [BlockHeaderLen]byte
	BlockHeader{FileID: 1}.Put(b[:])
	if _, err := ParseBlockHeader(b[:31]); !errors.Is(err, ErrBlockShort) {
		t.Fatalf("short: %v", err)
	}
	// A resend request is not a block, and the other way round.
	ResendRequest{FileID: 1, Length: 1}.Put(b[:])
	if _, err := ParseBlockHeader(b[:]); !errors.Is(err, ErrBlockMagic) {
		t.Fatalf("resend parsed as block: %v", err)
	}
}

func FuzzParseBlockHeader(f *testing.F) {
	var b [BlockHeaderLen]byte
	BlockHeader{FileID: 1, Offset: 1 << 20, Length: 4096, PayloadCRC: 0xdeadbeef}.Put(b[:])
	f.Add(b[:])
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := ParseBlockHeader(in)
		if err != nil {
			return
		}
		// What parses writes back byte for byte.
		var out [BlockHeaderLen]byte
		h.Put(out[:])
		if !bytes.Equal(out[:], in[:BlockHeaderLen]) {
			t.Fatalf("Put(Parse(%x)) = %x", in[:BlockHeaderLen], out)
		}
		if h.Length > MaxBlockLen || h.Flags&^(BlockFlagCompressed|BlockFlagZeros) != 0 || h.Flags == BlockFlagCompressed|BlockFlagZeros {
			t.Fatalf("accepted %+v", h)
		}
	})
}

func FuzzParseResendRequest(f *testing.F) {
	var b [FrameLen]byte
	ResendRequest{FileID: 4, Offset: 786432, Length: 262144}.Put(b[:])
	f.Add(b[:])
	ResendRequest{FileID: 9, Stop: true}.Put(b[:])
	f.Add(b[:])
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ParseResendRequest(in)
		if err != nil {
			return
		}
		// What parses writes back byte for byte.
		var out [FrameLen]byte
		r.Put(out[:])
		if !bytes.Equal(out[:], in[:FrameLen]) {
			t.Fatalf("Put(Parse(%x)) = %x", in[:FrameLen], out)
		}
		if r.Length > MaxBlockLen || r.Stop && (r.Offset != 0 || r.Length != 0) {
			t.Fatalf("accepted %+v", r)
		}
	})
}

func BenchmarkBlockHeader(b *testing.B) {
	var buf [BlockHeaderLen]byte
	h := BlockHeader{FileID: 9, Offset: 1 << 33, Length: 256 << 10, PayloadCRC: 0x01020304}
	b.Run("Put", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(BlockHeaderLen)
		for b.Loop() {
			h.Put(buf[:])
		}
	})
	b.Run("Parse", func(b *testing.B) {
		h.Put(buf[:])
		b.ReportAllocs()
		b.SetBytes(BlockHeaderLen)
		for b.Loop() {
			if _, err := ParseBlockHeader(buf[:]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
