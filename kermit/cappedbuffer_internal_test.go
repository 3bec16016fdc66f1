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

// What cappedBuffer holds takes at most a chunk more than was written,
// written in packets' worth as a reply comes: no doubling buffer, whose
// old and new copies took five times the text (QA aq).
func TestCappedBufferHoldsLittleMore(t *testing.T) {
	b := cappedBuffer{max: 64 << 20}
	p := bytes.Repeat([]byte("x"), 90)
	for b.n+len(p) <= 10<<20 {
		if _, err := b.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	held := 0
	for _, c := range b.chunks {
		held += cap(c)
	}
	if held > b.n+replyChunk {
		t.Errorf("%d bytes held for %d written", held, b.n)
	}
}
