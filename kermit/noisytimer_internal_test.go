package kermit

import (
	"testing"
	"time"
)

// On a serial line the timer backed off by timeouts comes back as soon
// as the window moves, and a packet that went out before another was
// sent again gives no round-trip sample: a receiver may hold its ACK
// until the gap before it is filled. With either missing, kerf sending
// to C-Kermit at BER 1e-3 ran at the 5 s timeout's pace (15 KB in 300 s;
// 20 KB in 20-24 s with both).
func TestTimerAfterLossesOnASerialLine(t *testing.T) {
	s := &Session{cfg: Config{LineSpeed: 115200}}
	s.rtt.init(5 * time.Second)
	s.rtt.min, s.rtt.max = 100*time.Millisecond, 5*time.Second
	s.rtt.sample(50 * time.Millisecond)
	base := s.rtt.rto

	t0 := time.Now().Add(-20 * time.Second)
	lost := &slot{seq: 0, typ: 'D', sends: 1, sentAt: t0, expect: t0}
	held := &slot{seq: 1, typ: 'D', sends: 1, sentAt: t0.Add(time.Millisecond), expect: t0.Add(time.Millisecond)}
	s.sw.slots[0], s.sw.slots[1] = lost, held
	s.sw.lo, s.sw.next, s.sw.count, s.sw.size = 0, 2, 2, 31

	// Packet 0 is lost; three timeouts back the timer off, each sending
	// it again.
	for range 3 {
		s.rtt.backoff()
		lost.sends++
		lost.sentAt = time.Now()
		s.lastResend = lost.sentAt
	}
	if s.rtt.rto <= base {
		t.Fatalf("backoff left the timer at %v", s.rtt.rto)
	}
	// The receiver answers packet 1, held since it came 20 s ago, once
	// packet 0 is in: no sample of 20 s.
	if err := s.acked(held, nil); err != nil {
		t.Fatal(err)
	}
	if s.rtt.srtt > time.Second {
		t.Errorf("an ACK held behind a loss was taken as a %v round trip", s.rtt.srtt)
	}
	// The window has not moved yet (packet 0 is not ACKed): still backed off.
	if s.rtt.rto <= base {
		t.Errorf("the timer came back before the window moved")
	}
	if err := s.acked(lost, nil); err != nil {
		t.Fatal(err)
	}
	if s.sw.count != 0 {
		t.Fatalf("window holds %d packets after both ACKs", s.sw.count)
	}
	if s.rtt.rto != base {
		t.Errorf("after the window moved the timer is %v, want %v as before the losses", s.rtt.rto, base)
	}

	// Not on a link of unknown speed (TCP, a pipe): there a timeout may
	// mean congestion, and Karn's rule keeps the backoff.
	u := &Session{}
	u.rtt.init(5 * time.Second)
	u.rtt.max = 60 * time.Second
	u.rtt.sample(50 * time.Millisecond)
	ubase := u.rtt.rto
	u.rtt.backoff()
	sl := &slot{seq: 0, typ: 'D', sends: 2, sentAt: time.Now()}
	u.sw.slots[0] = sl
	u.sw.lo, u.sw.next, u.sw.count, u.sw.size = 0, 1, 1, 31
	if err := u.acked(sl, nil); err != nil {
		t.Fatal(err)
	}
	if u.rtt.rto == ubase {
		t.Errorf("without a line speed the backoff was undone")
	}
}
