package datachan

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"

	"kerf/framing"
)

// fileDst is a file the data path may splice into.
type fileDst struct{ f *os.File }

func (d fileDst) WriteAt(b []byte, off int64) (int, error) { return d.f.WriteAt(b, off) }
func (d fileDst) BackingFile() *os.File                    { return d.f }

func tempFile(t *testing.T) *os.File {
	f, err := os.Create(filepath.Join(t.TempDir(), "dst"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Large blocks into a plain file over plain TCP go through splice and
// land byte for byte; small blocks of the same stream are read.
func TestSpliceIntoFile(t *testing.T) {
	for _, streams := range []int{1, 2} {
		s, r := pathPair(t, streams, nil, WithBlockSize(256<<10))
		ctx := testContext(t)
		for id, n := range []int{3<<20 + 12345, 1000, 200 << 10, 64 << 10} {
			data := randomData(uint64(id), n)
			f := tempFile(t)
			if err := r.Expect(uint32(id+1), fileDst{f}, 0, int64(n)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SendFile(ctx, uint32(id+1), bytes.NewReader(data), 0, int64(n)); err != nil {
				t.Fatal(err)
			}
			crc, err := r.Wait(ctx, uint32(id+1))
			if err != nil {
				t.Fatal(err)
			}
			if crc != framing.CRC32C(data) {
				t.Fatalf("file %d: crc %08x, want %08x", id+1, crc, framing.CRC32C(data))
			}
			got, _ := os.ReadFile(f.Name())
			if !bytes.Equal(got, data) {
				t.Fatalf("streams=%d file %d (%d bytes): contents differ", streams, id+1, n)
			}
		}
		// 14 blocks are large; one whose header came in through the
		// read buffer with part of its payload is read instead.
		if st := r.Stats(); st.Spliced < 10 {
			t.Errorf("streams=%d: %d blocks spliced, want most of the 14 large ones: %+v", streams, st.Spliced, st)
		}
	}
}

// A spliced block whose check fails is asked for again on the wire, and
// the good copy that follows replaces it in the file.
func TestSpliceBadBlockResent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	peer, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	r := NewPath([]net.Conn{c})
	defer r.Close()
	ctx := testContext(t)
	data := randomData(7, 128<<10)
	f := tempFile(t)
	if err := r.Expect(1, fileDst{f}, 0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), data...)
	bad[1000] ^= 0x40
	var hdr [framing.BlockHeaderLen]byte
	framing.BlockHeader{FileID: 1, Offset: 0, Length: uint32(len(data)), PayloadCRC: framing.CRC32C(data)}.Put(hdr[:])
	if _, err := peer.Write(append(hdr[:], bad...)); err != nil {
		t.Fatal(err)
	}
	var req [framing.FrameLen]byte
	if _, err := peer.Read(req[:]); err != nil {
		t.Fatal(err)
	}
	rr, err := framing.ParseResendRequest(req[:])
	if err != nil || rr.FileID != 1 || rr.Offset != 0 || rr.Length != uint32(len(data)) {
		t.Fatalf("resend request %+v, %v", rr, err)
	}
	if _, err := peer.Write(append(hdr[:], data...)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(f.Name())
	if !bytes.Equal(got, data) {
		t.Fatal("file contents differ after the resend")
	}
	if st := r.Stats(); st.BadBlocks != 1 || st.Spliced != 1 {
		t.Errorf("stats %+v: want 1 bad block, 1 spliced", st)
	}
}
