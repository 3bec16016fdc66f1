package kermit

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// cappedBuffer keeps what is written in order, across its chunks, and
// refuses a write that would take it past its bound, keeping what it had.
func TestCappedBufferKeepsTheText(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var want bytes.Buffer
	b := cappedBuffer{max: 3*replyChunk + 123}
	for {
		p := make([]byte, rng.IntN(70_000)+1)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		if n, err := b.Write(p); err != nil {
			if n != 0 || want.Len()+len(p) <= b.max {
				t.Fatalf("write of %d at %d: %d, %v", len(p), want.Len(), n, err)
			}
			break
		}
		want.Write(p)
	}
	if got := b.String(); got != want.String() {
		t.Errorf("held %d bytes, differing from the %d written", len(got), want.Len())
	}
}
