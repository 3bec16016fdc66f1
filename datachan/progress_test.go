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
	r := &movingReader{bytes.NewReader(make([]byte, 2*progressQuantum)), &p.stats.moving}
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
