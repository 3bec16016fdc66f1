package kermit

import (
	"io"
	"net"
	"testing"
	"time"

	"kerf/framing"
)

// In stop-and-wait, a peer answers every copy of a packet; an ACK of the
// packet before the one in flight is the answer to a copy a timeout sent
// until as many answers have come as copies went, and only after that
// the peer's word that it got a damaged copy of the packet in flight
// (G-Kermit's NAK). On a 300 ms link to G-Kermit (QA) the answer to such
// a copy came a round trip after the next packet left; taken for a NAK,
// it sent that packet twice, whose second answer did the same to the
// next, to the end of the file (100 s for 50 KB, against 19 s).
func TestEchoedACKIsNotANAK(t *testing.T) {
	s := stopAndWaitSession(t, 300*time.Millisecond)

	long := time.Now().Add(-time.Second) // long enough ago for any guard
	prev := &slot{seq: 40, typ: 'D', sends: 2, sentAt: long, expect: long, wire: []byte("prev")}
	s.sw.slots[40], s.sw.lo, s.sw.next, s.sw.count = prev, 40, 41, 1
	if err := s.acked(prev, nil); err != nil { // the first copy's answer
		t.Fatal(err)
	}
	lo := &slot{seq: 41, typ: 'D', sends: 1, sentAt: long, expect: long, wire: []byte("lo")}
	s.sw.slots[41], s.sw.lo, s.sw.next, s.sw.count = lo, 41, 42, 1

	ackPrev := inPacket{Packet: framing.Packet{Seq: 40, Type: 'Y'}}
	if err := s.handleReply(ackPrev); err != nil {
		t.Fatal(err)
	}
	if lo.sends != 1 {
		t.Fatalf("the answer to the second copy of packet 40 sent packet 41 again")
	}
	// Every copy answered: another ACK of 40 is G-Kermit's NAK of 41.
	if err := s.handleReply(ackPrev); err != nil {
		t.Fatal(err)
	}
	if lo.sends != 2 {
		t.Errorf("an ACK of 40 beyond its copies' answers did not send 41 again (sends %d)", lo.sends)
	}
}

// A copy sent because the peer said it got the one before damaged gets no
// second answer: an ACK of that packet then is a NAK of the next at once
// (at BER 1e-3 to G-Kermit, waiting for timeouts instead doubled the
// time: 32-47 s for 20 KB against 16-28 s).
func TestACKAfterDamagedCopyIsANAK(t *testing.T) {
	s := stopAndWaitSession(t, 10*time.Millisecond)
	long := time.Now().Add(-time.Second)
	prev := &slot{seq: 7, typ: 'D', sends: 2, damaged: 1, sentAt: long, expect: long, wire: []byte("prev")}
	s.sw.slots[7], s.sw.lo, s.sw.next, s.sw.count = prev, 7, 8, 1
	if err := s.acked(prev, nil); err != nil {
		t.Fatal(err)
	}
	lo := &slot{seq: 8, typ: 'D', sends: 1, sentAt: long, expect: long, wire: []byte("lo")}
	s.sw.slots[8], s.sw.lo, s.sw.next, s.sw.count = lo, 8, 9, 1
	if err := s.handleReply(inPacket{Packet: framing.Packet{Seq: 7, Type: 'Y'}}); err != nil {
		t.Fatal(err)
	}
	if lo.sends != 2 {
		t.Errorf("an ACK of 7, whose second copy was sent for damage, did not send 8 again")
	}
}

// stopAndWaitSession is a session with a window of one and a round trip
// of srtt, writing to a pipe whose other end is drained.
func stopAndWaitSession(t *testing.T, srtt time.Duration) *Session {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close() })
	go io.Copy(io.Discard, b)
	s := NewSession(a, DefaultConfig())
	s.rtt.init(5 * time.Second)
	s.rtt.sample(srtt)
	s.sw.size = 1
	return s
}
