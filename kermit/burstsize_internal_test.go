package kermit

import (
	"bytes"
	"context"
	"testing"

	"kerf/framing"
)

// The next data packet is sized after every answer already come, not
// after the first that made room in the window: ACKs of 0 to 8 then a
// NAK of 9, in one burst, must size it for a line that loses packets.
// Sized at the first ACK, the adapter had seen no loss yet (its
// slow-start cap doubling on each ACK), and on a slipping line nine
// packets of 0.5-1.4 KB went out that one copy in eight got through
// whole.
func TestBurstOfAnswersTakenBeforeSizing(t *testing.T) {
	s := stuckWindow(t, 0)
	s.neg.maxData = 9000
	s.adapt.init(9000)
	ctx := context.Background()
	data := bytes.Repeat([]byte("x"), 259)
	for i := 0; i < 31; i++ {
		if _, err := s.queue(ctx, 'D', data, len(data)); err != nil {
			t.Fatal(err)
		}
	}
	for seq := 0; seq < 9; seq++ {
		s.c.in <- inPacket{Packet: framing.Packet{Seq: seq, Type: 'Y'}}
	}
	s.c.in <- inPacket{Packet: framing.Packet{Seq: 9, Type: 'N'}}
	if err := s.awaitRoom(ctx); err != nil {
		t.Fatal(err)
	}
	if s.sw.lo != 9 {
		t.Fatalf("window from %d, want 9: not every answer was taken", s.sw.lo)
	}
	// A loss in about 8 KB sent: sqrt(12 / (1.1/8,200)), some 300 bytes;
	// with none seen, 512 (the cap) or more.
	if n := s.dataLen(); n > 400 {
		t.Errorf("next data packet %d bytes after a NAK in the burst, want at most 400", n)
	}
}
