package datachan

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sparseFile writes a 10 MiB file whose only data are at [0, 1 MiB),
// 100 bytes at 5 MiB + 100 and its last 100 bytes; the rest are holes.
func sparseFile(t *testing.T) (*os.File, []byte) {
	t.Helper()
	const mib = 1 << 20
	want := make([]byte, 10*mib)
	copy(want, randomData(3, mib))
	copy(want[5*mib+100:], randomData(4, 100))
	copy(want[10*mib-100:], randomData(5, 100))
	f, err := os.Create(filepath.Join(t.TempDir(), "sparse.img"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for _, r := range [][2]int{{0, mib}, {5*mib + 100, 5*mib + 200}, {10*mib - 100, 10 * mib}} {
		if _, err := f.WriteAt(want[r[0]:r[1]], int64(r[0])); err != nil {
			t.Fatal(err)
		}
	}
	if !hasHoles(f) {
		t.Fatalf("%s has no holes on this file system", f.Name())
	}
	return f, want
}

// A sparse file's blocks that lie in holes cross as headers alone, to a
// peer that takes them, and arrive as zeros.
func TestHolesCrossAsBlocksOfZeros(t *testing.T) {
	f, want := sparseFile(t)
	s, r := pathPair(t, 2, nil, WithZeroBlocks(true))
	transferFrom(t, s, r, 1, f, want)
	// Blocks 1-4 and 6-8 (of 1 MiB) are all hole; 0, 5 and 9 hold data.
	if got, wantZeros := s.Stats().ZeroBytesSent, int64(7<<20); got != wantZeros {
		t.Errorf("%d bytes sent as zeros, want %d", got, wantZeros)
	}
	if got := r.Stats().ZeroBytesReceived; got != 7<<20 {
		t.Errorf("%d bytes received as zeros, want %d", got, 7<<20)
	}
	if got := s.Stats().BytesSent; got != 3<<20 {
		t.Errorf("%d payload bytes sent, want %d", got, 3<<20)
	}

	// Without the agreement every block carries its bytes.
	s, r = pathPair(t, 2, nil)
	transferFrom(t, s, r, 1, f, want)
	if got := s.Stats().ZeroBytesSent; got != 0 {
		t.Errorf("%d bytes sent as zeros to a peer that did not agree", got)
	}
}

// A block of zeros from a peer that did not agree is a protocol error.
func TestBlocksOfZerosUnagreedAreRefused(t *testing.T) {
	f, want := sparseFile(t)
	cc, sc := pairedConns(t, 1)
	s, r := NewPath(cc, WithZeroBlocks(true)), NewPath(sc)
	t.Cleanup(func() { s.Close(); r.Close() })
	if err := r.Expect(1, newMemFile(len(want)), 0, int64(len(want))); err != nil {
		t.Fatal(err)
	}
	s.SendFile(testContext(t), 1, f, 0, int64(len(want)))
	<-r.Failed()
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "not agreed") {
		t.Errorf("receiver failed with %v; want a block of zeros not agreed", err)
	}
}

// Blocks of zeros that come before their file is expected are parked as
// the headers they are: a small park holds them all, and none is asked
// for again (review 51b: each held 1 MiB of zeros there, and past the
// park's limit came back as data).
func TestBlocksOfZerosParkAsHeaders(t *testing.T) {
	f, want := sparseFile(t)
	s, r := pathPair(t, 2, nil, WithZeroBlocks(true), WithParkLimit(4<<20))
	ctx := testContext(t)
	done := make(chan error, 1)
	go func() { _, err := s.SendFile(ctx, 1, f, 0, int64(len(want))); done <- err }()
	waitFor(t, func() bool { st := r.Stats(); return st.Parked+st.Deferred == 10 })
	dst := newMemFile(len(want))
	if err := r.Expect(1, dst, 0, int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst.bytes(), want) {
		t.Fatal("received bytes differ")
	}
	if st := r.Stats(); st.Deferred != 0 || s.Stats().BlocksResent != 0 {
		t.Errorf("deferred %d, sent again %d; want every block parked", st.Deferred, s.Stats().BlocksResent)
	}
}

// A sparse file that shrank below the range being sent is read, and
// found short, not sent as zeros past its end (review 51b).
func TestShrunkSparseFileIsNotSentAsZeros(t *testing.T) {
	f, want := sparseFile(t)
	if err := f.Truncate(4 << 20); err != nil {
		t.Fatal(err)
	}
	s, r := pathPair(t, 1, nil, WithZeroBlocks(true))
	if err := r.Expect(1, newMemFile(len(want)), 0, int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendFile(testContext(t), 1, f, 0, int64(len(want))); err == nil {
		t.Error("SendFile of a file cut to 4 MiB of 10 succeeded")
	}
}

// A range of one block in a hole goes as a block of zeros too (QA aa: a
// resume's one-block gaps of a sparse image went as data).
func TestOneBlockInAHoleIsABlockOfZeros(t *testing.T) {
	f, want := sparseFile(t)
	s, r := pathPair(t, 1, nil, WithZeroBlocks(true))
	ctx := testContext(t)
	dst := newMemFile(len(want))
	const mib = 1 << 20
	if err := r.Expect(1, dst, 2*mib, mib); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendFile(ctx, 1, f, 2*mib, mib); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().ZeroBytesSent; got != mib {
		t.Errorf("%d bytes sent as zeros, want %d", got, mib)
	}
}

// skippingFile is a memFile that takes blocks of zeros as holes
// (ZeroSkipper), counting what it was given and what it skipped.
type skippingFile struct {
	*memFile
	mu               sync.Mutex
	written, skipped int64
}

func (s *skippingFile) WriteAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	s.written += int64(len(p))
	s.mu.Unlock()
	return s.memFile.WriteAt(p, off)
}

func (s *skippingFile) SkipZerosAt(off, n int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skipped += n
	return true, nil // a new memFile holds zeros already
}

// A destination that takes blocks of zeros as holes (a sparse store) is
// not given their bytes.
func TestBlocksOfZerosGoToAZeroSkipper(t *testing.T) {
	f, want := sparseFile(t)
	s, r := pathPair(t, 2, nil, WithZeroBlocks(true))
	dst := &skippingFile{memFile: newMemFile(len(want))}
	ctx := testContext(t)
	if err := r.Expect(1, dst, 0, int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendFile(ctx, 1, f, 0, int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst.bytes(), want) {
		t.Fatal("received bytes differ")
	}
	if dst.written != 3<<20 || dst.skipped != 7<<20 {
		t.Errorf("written %d, skipped %d; want the 3 MiB of data written, the 7 of holes skipped", dst.written, dst.skipped)
	}
}
