package datachan

import (
	"bytes"
	"io"
	"testing"
)

// Within a block, progress shows only for every progressQuantum bytes:
// a peer trickling bytes does not keep an idle watchdog from seeing it
// idle (QA: one byte a second held a session past --idle-timeout).
func TestProgressWithinABlockByTheQuantum(t *testing.T) {
	var p Path
	r := &movingReader{r: bytes.NewReader(make([]byte, 2*progressQuantum)), moving: &p.stats.moving}
	at := p.Progress()
	for range progressQuantum - 1 {
		if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if p.Progress() != at {
		t.Fatalf("%d bytes trickled in showed as progress", progressQuantum-1)
	}
	if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if p.Progress() == at {
		t.Fatalf("%d bytes in did not show as progress", progressQuantum)
	}
}

// lenRecorder is a reader that notes the longest buffer it was asked
// to fill.
type lenRecorder struct {
	r       io.Reader
	longest int
}

func (l *lenRecorder) Read(b []byte) (int, error) {
	l.longest = max(l.longest, len(b))
	return l.r.Read(b)
}

// A block header may claim 16 MiB: its payload's buffer is taken only
// once its first MiB has come, so a peer that sends the header and
// stalls holds no more than that (QA: 16 MiB a connection, 424 MB for
// three stalled sessions); a whole big block still reads whole.
func TestBigBlockBufferTakenAsItComes(t *testing.T) {
	var p Path
	stalled := &lenRecorder{r: bytes.NewReader(make([]byte, 100))}
	s := &stream{p: &p, in: movingReader{r: stalled, moving: &p.stats.moving}}
	if _, err := s.readPayload(16 << 20); err == nil {
		t.Fatal("a payload cut short read without an error")
	}
	if stalled.longest > payloadFirst {
		t.Errorf("a 16 MiB payload of which 100 bytes came was read into a %d-byte buffer, more than %d", stalled.longest, payloadFirst)
	}

	want := make([]byte, 3<<20+5)
	for i := range want {
		want[i] = byte(i * 7)
	}
	s = &stream{p: &p, in: movingReader{r: bytes.NewReader(want), moving: &p.stats.moving}}
	f, err := s.readPayload(len(want))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.payload, want) {
		t.Error("a 3 MiB payload read in two steps came out different")
	}
	p.putFrame(f)
}
