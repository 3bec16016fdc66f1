package holes

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"kerf/framing"
)

// CRC32C counts holes as zeros without reading them and gives the
// CRC-32C a read of every byte gives, for any range of files of runs of
// data and holes; a range past the file's end is an error.
func TestCRCOfRangeSkipsHolesExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 7))
	dir := t.TempDir()
	for i := range 20 {
		p := filepath.Join(dir, "f")
		os.Remove(p)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		size := int64(1+rng.IntN(64)) << 16
		f.Truncate(size)
		whole := make([]byte, size)
		for range 1 + rng.IntN(6) {
			off := rng.Int64N(size)
			n := min(int64(1+rng.IntN(200_000)), size-off)
			b := whole[off : off+n]
			for j := range b {
				b[j] = byte(rng.IntN(256))
			}
			f.WriteAt(b, off)
		}
		for range 5 {
			off := rng.Int64N(size)
			end := off + rng.Int64N(size-off+1)
			got, err := CRC32C(int(f.Fd()), f, off, end)
			if want := framing.CRC32C(whole[off:end]); err != nil || got != want {
				t.Fatalf("file %d (%d bytes), [%d,%d): %08x, %v; want %08x", i, size, off, end, got, err, want)
			}
		}
		f.WriteAt([]byte{1}, size-1) // data at the end, then not
		for _, off := range []int64{size - 10, size + 5} {
			if _, err := CRC32C(int(f.Fd()), f, off, size+10); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("[%d,%d) past the end at %d: %v, want ErrUnexpectedEOF", off, size+10, size, err)
			}
		}
		f.Close()
	}
}

// A reader that is no file (fd -1) is read whole.
func TestCRC32COfAReader(t *testing.T) {
	b := []byte("kerf keeps what came past the gap")
	r := bytesReader(b)
	if got, err := CRC32C(-1, r, 5, int64(len(b))); err != nil || got != framing.CRC32C(b[5:]) {
		t.Errorf("CRC32C(-1, …) = %08x, %v; want %08x", got, err, framing.CRC32C(b[5:]))
	}
	if _, err := CRC32C(-1, r, 5, int64(len(b))+1); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("past the end: %v, want ErrUnexpectedEOF", err)
	}
}

type bytesReader []byte

func (b bytesReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
