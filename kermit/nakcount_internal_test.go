package kermit

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"kerf/framing"
)

// stuckWindow is a sender with n data packets in flight on a link whose
// smoothed round trip (1 s) is far longer than its answers take, as when
// answers queue behind a window of packets.
func stuckWindow(t *testing.T, n int) *Session {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close() })
	go io.Copy(io.Discard, b)
	cfg := DefaultConfig()
	cfg.Timeout = time.Minute
	s := NewSession(a, cfg)
	t.Cleanup(s.Close)
	s.neg.window, s.neg.maxData = 31, 90
	s.sw.reset(31)
	s.rtt.srtt, s.rtt.rto = time.Second, time.Minute
	for i := 0; i < n; i++ {
		if _, err := s.queue(context.Background(), 'D', []byte("data"), 4); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func nakOf(seq int) inPacket { return inPacket{Packet: framing.Packet{Seq: seq, Type: 'N'}} }

// Each copy of a packet gets one answer from the receiver, so a NAK that
// answers the latest copy of the packet the window is stuck behind has
// it sent again at once, however soon after it left; one that answers
// an earlier copy does not. Timed instead against the smoothed round
// trip, every NAK of a copy the line damaged came "too soon" and the
// copy waited out a doubled timeout.
func TestNAKOfLatestCopyResends(t *testing.T) {
	s := stuckWindow(t, 3)
	s.sw.slots[0].stalled = true // as a timeout that sent it again finds it
	steps := []struct {
		nak    int
		resent int64 // retransmissions after it
	}{
		{0, 1}, // the first copy's NAK: sent again
		{0, 2}, // the second copy's (damaged too): again, at once
		{0, 3},
	}
	for i, st := range steps {
		if err := s.handleReply(nakOf(st.nak)); err != nil {
			t.Fatal(err)
		}
		if s.stats.Retransmissions != st.resent {
			t.Fatalf("step %d: %d retransmissions, want %d", i, s.stats.Retransmissions, st.resent)
		}
	}
	// Two copies out at once (a timeout's and a NAK's): the first NAK
	// answers the earlier copy and is not acted on; the second answers
	// the latest.
	sl := s.sw.slots[0]
	if err := s.transmit(sl); err != nil {
		t.Fatal(err)
	}
	before := s.stats.Retransmissions
	if err := s.handleReply(nakOf(0)); err != nil {
		t.Fatal(err)
	}
	if s.stats.Retransmissions != before {
		t.Errorf("a NAK of an earlier copy sent the packet again")
	}
	if err := s.handleReply(nakOf(0)); err != nil {
		t.Fatal(err)
	}
	if s.stats.Retransmissions != before+1 {
		t.Errorf("the NAK of the latest copy did not send it again")
	}
}

// With the window stuck behind its lowest packet, sent again on a
// timeout and the last thing sent, the receiver's answer to a damaged
// copy may NAK another packet (it asks for gaps it has not asked for
// first) or come damaged itself: either way that copy went the same, and
// it goes again at once.
func TestStalledCopyAnsweredOtherwise(t *testing.T) {
	for _, answer := range []inPacket{nakOf(2), {bad: true}} {
		s := stuckWindow(t, 3)
		lo := s.sw.slots[0]
		lo.unanswered, lo.stalled = 0, true // a timeout's doing
		if err := s.transmit(lo); err != nil {
			t.Fatal(err)
		}
		if err := s.handleReply(answer); err != nil {
			t.Fatal(err)
		}
		if lo.sends != 3 {
			t.Errorf("answer %+v: packet 0 sent %d times, want 3 (again at once)", answer, lo.sends)
		}
	}
}

// Not while the window moves: a second NAK of a packet whose copy is on
// its way (the receiver NAKs its lowest gap again on other damage) is
// left to the timer, as a copy sent at once may duplicate the one
// coming, in line time new packets would have had.
func TestNAKOfLatestWhileWindowMoves(t *testing.T) {
	s := stuckWindow(t, 3)
	for i := 0; i < 2; i++ {
		if err := s.handleReply(nakOf(0)); err != nil {
			t.Fatal(err)
		}
	}
	if s.stats.Retransmissions != 1 {
		t.Errorf("%d retransmissions after two NAKs of a packet no timeout found stuck, want 1", s.stats.Retransmissions)
	}
}

// A damaged answer to the latest copy of a Send-Init a timeout sent
// again sends it once more, not twice: both the stalled-copy rule and
// the Send-Init rule see it, and two copies out at once bring two
// answers, the second taken for news of a later packet.
func TestDamagedAnswerToStalledInitResendsOnce(t *testing.T) {
	for _, typ := range []byte{'S', 'I'} {
		a, b := net.Pipe()
		go io.Copy(io.Discard, b)
		cfg := DefaultConfig()
		cfg.Timeout = time.Minute
		s := NewSession(a, cfg)
		sl, err := s.queue(context.Background(), typ, []byte("~* @-#Y3~^>J)0___"), 0)
		if err != nil {
			t.Fatal(err)
		}
		sl.unanswered, sl.stalled = 0, true // a timeout's doing
		if err := s.transmit(sl); err != nil {
			t.Fatal(err)
		}
		retries := s.retries
		if err := s.handleReply(inPacket{bad: true}); err != nil {
			t.Fatal(err)
		}
		if sl.sends != 3 {
			t.Errorf("%c: sent %d times, want 3 (once more for the damaged answer)", typ, sl.sends)
		}
		if s.retries != retries+1 {
			t.Errorf("%c: %d retries counted for one damaged answer, want 1", typ, s.retries-retries)
		}
		s.Close()
		a.Close()
	}
}
