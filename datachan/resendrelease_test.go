package datachan

import (
	"os"
	"sync"
	"testing"
	"time"

	"kerf/framing"
)

// closingFile is a source whose first read waits at gate (after saying
// so on reading), and which fails every read once closed, as an
// *os.File does.
type closingFile struct {
	mu      sync.Mutex
	closed  bool
	reading chan struct{}
	gate    chan struct{}
	first   sync.Once
}

func (g *closingFile) ReadAt(b []byte, off int64) (int, error) {
	g.first.Do(func() {
		close(g.reading)
		<-g.gate
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, &os.PathError{Op: "read", Path: "f", Err: os.ErrClosed}
	}
	return len(b), nil
}

// Resend requests queued before their file was released (its Z, which
// discarded it, was answered, and the file closed) are dropped: read
// from the closed file, they failed the whole Path.
func TestResendQueuedBeforeReleaseDropped(t *testing.T) {
	s, _ := pathPair(t, 1, nil)
	g := &closingFile{reading: make(chan struct{}), gate: make(chan struct{})}
	if _, err := s.register(7, g, 0, 1<<20); err != nil {
		t.Fatal(err)
	}
	st := s.streams[0]
	for _, off := range []uint64{0, 65536} {
		if err := st.resend(framing.ResendRequest{FileID: 7, Offset: off, Length: 65536}); err != nil {
			t.Fatal(err)
		}
	}
	<-g.reading // the first request is being read
	s.Release(7)
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	close(g.gate)
	// The Path must not fail; a failure would come at once.
	select {
	case <-s.Failed():
		t.Fatalf("path failed: %v", s.Err())
	case <-time.After(300 * time.Millisecond):
	}
}
