package datachan

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// closingSource is a src whose reads take a while, and which counts the
// reads that see it closed (begun or still under way after its Close).
type closingSource struct {
	data   []byte
	closed atomic.Bool
	late   atomic.Int64
}

func (s *closingSource) ReadAt(p []byte, off int64) (int, error) {
	if s.closed.Load() {
		s.late.Add(1)
		return 0, os.ErrClosed
	}
	time.Sleep(time.Millisecond)
	if s.closed.Load() {
		s.late.Add(1) // read while the caller thought it closed
	}
	return copy(p, s.data[off:]), nil
}

func (s *closingSource) Close() { s.closed.Store(true) }

// Once SendFile has returned, cancelled, no connection's writer reads
// its src again: the caller may close it (kermit does). The writers read
// blocks themselves, so SendFile waits for the reads under way (review:
// 14-17 reads after the return, over 20 tries, before it did).
func TestNoReadAfterCancelledSendFile(t *testing.T) {
	var late int64
	for try := range 10 {
		s, _ := pathPair(t, 4, nil, WithBlockSize(64<<10))
		src := &closingSource{data: randomData(uint64(try), 32<<20)}
		ctx, cancel := context.WithCancel(testContext(t))
		done := make(chan error, 1)
		go func() {
			_, err := s.SendFile(ctx, 1, src, 0, int64(len(src.data)))
			done <- err
		}()
		time.Sleep(time.Duration(20+try*5) * time.Millisecond)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("SendFile: %v, want it cancelled", err)
		}
		src.Close()
		time.Sleep(20 * time.Millisecond) // room for a straggling read
		late += src.late.Load()
	}
	if late > 0 {
		t.Errorf("%d reads of a closed src after SendFile returned", late)
	}
}

// Of blocks that could not be read (writers read in parallel, so not
// in order), the first in the file is the one told (QA: a sysfs file
// shorter than its size was said to fail at its last block).
func TestFirstUnreadableBlockTold(t *testing.T) {
	j := &sendJob{}
	j.fail(3072, errors.New("at 3072"))
	j.fail(1024, errors.New("at 1024"))
	j.fail(2048, errors.New("at 2048"))
	if j.err == nil || j.err.Error() != "at 1024" {
		t.Errorf("told %v, want the block at 1024", j.err)
	}
}
