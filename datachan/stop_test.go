package datachan

import (
	"errors"
	"sync/atomic"
	"testing"
)

// patternSource is a large file that costs no memory: byte i is i%251.
// It counts what is read of it.
type patternSource struct{ read atomic.Int64 }

// pattern is 251 periods of the source's bytes and one more.
var pattern = func() []byte {
	b := make([]byte, 252*251)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}()

func (p *patternSource) ReadAt(b []byte, off int64) (int, error) {
	for n := 0; n < len(b); {
		start := int((off + int64(n)) % 251)
		n += copy(b[n:], pattern[start:])
	}
	p.read.Add(int64(len(b)))
	return len(b), nil
}

// fullAfter takes n bytes and then fails every write, as a disk that
// fills.
type fullAfter struct{ left atomic.Int64 }

func (f *fullAfter) WriteAt(b []byte, off int64) (int, error) {
	if f.left.Add(-int64(len(b))) < 0 {
		return 0, errors.New("no space left on device")
	}
	return len(b), nil
}

// A receiver that cannot write a file tells its sender, which sends
// nothing more of it and says so; the Path goes on (QA ar F8: a disk
// full 200 MB into a 1 GiB file took the rest of it across, dropped).
// Without stops agreed the whole file crosses, as before.
func TestStopRequestEndsTheFile(t *testing.T) {
	for _, stops := range []bool{true, false} {
		t.Run(map[bool]string{true: "agreed", false: "not agreed"}[stops], func(t *testing.T) {
			s, r := pathPair(t, 2, nil, WithBlockSize(256<<10), WithStops(stops))
			stopsTheSender(t, s, r, 256<<20, stops)
		})
	}
}

// Over QUIC streams too, whose frames go as TCP's do.
func TestQUICStopRequest(t *testing.T) {
	l, q, conf := quicPair(t)
	cc, sc := quicStreams(t, l, q, conf, 2)
	s, r := NewPath(cc, WithBlockSize(256<<10), WithStops(true)), NewPath(sc, WithBlockSize(256<<10), WithStops(true))
	defer s.Close()
	defer r.Close()
	stopsTheSender(t, s, r, 64<<20, true)
}

// stopsTheSender sends size bytes from s to r, whose writes fail 4 MiB
// in: with stops agreed the sender reads a part of it and is told
// StoppedError, without them all of it; the Path goes on either way.
func stopsTheSender(t *testing.T, s, r *Path, size int64, stops bool) {
	t.Helper()
	ctx := testContext(t)
	dst := &fullAfter{}
	dst.left.Store(4 << 20)
	if err := r.Expect(1, dst, 0, size); err != nil {
		t.Fatal(err)
	}
	src := &patternSource{}
	_, err := s.SendFile(ctx, 1, src, 0, size)
	_, werr := r.Wait(ctx, 1)
	wantErrContaining(t, werr, "no space left on device", "file 1")
	var stopped *StoppedError
	if !stops {
		if err != nil {
			t.Fatalf("SendFile: %v, want the whole file sent", err)
		}
		if n := src.read.Load(); n < size {
			t.Fatalf("read %d bytes of %d", n, size)
		}
		return
	}
	if !errors.As(err, &stopped) || stopped.ID != 1 {
		t.Fatalf("SendFile: %v, want StoppedError of file 1", err)
	}
	// What was under way when the stop came, not the whole file.
	if n := src.read.Load(); n > size/2 {
		t.Errorf("read %d MiB of the %d MiB file after its receiver failed it 4 MiB in", n>>20, size>>20)
	}
	// A later SendFile of the same file (the rest after a verdict's
	// chunk) stops at once.
	if _, err := s.SendFile(ctx, 1, src, 0, 1<<20); !errors.As(err, &stopped) {
		t.Fatalf("SendFile after the stop: %v", err)
	}
	s.Release(1)
	transfer(t, s, r, 2, randomData(3, 3<<20)) // the Path goes on
}

// A stop request where none was agreed, or for a file never sent, is the
// peer's protocol error; one for a file released already (it crossed
// whole before the request came) is nothing.
func TestStopRequestChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stops bool
		id    uint32
		fails bool
	}{
		{"not agreed", false, 1, true},
		{"never sent", true, 9, true},
		{"released", true, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, r := pathPair(t, 1, nil, WithStops(tc.stops))
			if tc.stops {
				transfer(t, s, r, 1, randomData(4, 1000))
				s.Release(1)
			}
			err := s.streams[0].stop(tc.id)
			if tc.fails != (err != nil) {
				t.Fatalf("stop of file %d: %v", tc.id, err)
			}
			if err != nil && !errors.Is(err, ErrProtocol) {
				t.Fatalf("stop of file %d: %v, want a protocol error", tc.id, err)
			}
		})
	}
}
