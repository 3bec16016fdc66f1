package kermit

import (
	"testing"
	"time"
)

// An ACK that comes before the line's model had its packet across (a
// pty or stdio far faster than the stated speed) pulls the model back:
// the packets written after it are expected that much sooner, each
// still its own line time after the one before, and the next packet
// queues from there. (QA: 12 MB through a pty at the default 115200 put
// a killed peer's timeout 680 s off.)
func TestLineModelCorrectedByEarlyACK(t *testing.T) {
	s := &Session{cfg: Config{LineSpeed: 115200}}
	const size = 9000 // a long packet: 0.78 s at 115200
	per := lineTime(size, 115200)
	t0 := time.Now()
	s.linkFree = t0.Add(1000 * time.Second) // 12 MB already modelled ahead
	var sls []*slot
	for i := range 4 {
		sl := &slot{seq: i, sends: 1, expect: s.occupyLine(size)}
		s.sw.slots[i] = sl
		sls = append(sls, sl)
	}
	s.sw.lo, s.sw.count = 0, 4
	now := time.Now()
	s.lineFasterThanModel(sls[0], now)
	for i, sl := range sls[1:] {
		want := now.Add(time.Duration(i+1) * per)
		if d := sl.expect.Sub(want); d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("packet %d expected %v after the ACK, want %v", i+1, sl.expect.Sub(now), want.Sub(now))
		}
	}
	if d := s.linkFree.Sub(sls[3].expect); d != 0 {
		t.Errorf("the line is free %v after the last packet, want when it is across", d)
	}
	// An ACK on time (or late) changes nothing.
	before := sls[2].expect
	s.lineFasterThanModel(sls[1], sls[1].expect.Add(time.Second))
	if !sls[2].expect.Equal(before) {
		t.Errorf("a late ACK moved the model by %v", sls[2].expect.Sub(before))
	}
}

// An ACK that comes later than the model had its packet across, by more
// than the path's own round trip (a modem line slower than its port),
// pushes the packets written after it back by as much: they queue
// behind it on the real line, and timing them by the model sent them
// again while still queued. (QA: 200 KB over a 9600 bps line at
// --speed 115200 timed out every few packets.)
func TestLineModelCorrectedByLateACK(t *testing.T) {
	s := &Session{cfg: Config{LineSpeed: 115200}}
	s.rtt.least = 50 * time.Millisecond
	const size = 1000
	var sls []*slot
	for i := range 4 {
		sl := &slot{seq: i, typ: 'D', sends: 1, expect: s.occupyLine(size)}
		s.sw.slots[i] = sl
		sls = append(sls, sl)
	}
	s.sw.lo, s.sw.count = 0, 4
	before := []time.Time{sls[1].expect, sls[2].expect, sls[3].expect}
	free := s.linkFree
	const late = 2 * time.Second
	s.lineSlowerThanModel(sls[0], sls[0].expect.Add(s.rtt.least+late))
	for i, sl := range sls[1:] {
		if d := sl.expect.Sub(before[i]); d != late {
			t.Errorf("packet %d moved %v, want %v", i+1, d, late)
		}
	}
	if d := s.linkFree.Sub(free); d != late {
		t.Errorf("the line is free %v later, want %v", d, late)
	}

	// Within the round trip, or for a packet sent twice (whose ACK may
	// be the first copy's) or not a D (a Z's ACK waits for the receiver's
	// disk), nothing moves.
	cases := []struct {
		name string
		sl   *slot
		at   time.Time
	}{
		{"on time", sls[1], sls[1].expect.Add(s.rtt.least)},
		{"sent twice", &slot{seq: 1, typ: 'D', sends: 2, expect: sls[1].expect}, sls[1].expect.Add(time.Minute)},
		{"a Z", &slot{seq: 1, typ: 'Z', sends: 1, expect: sls[1].expect}, sls[1].expect.Add(time.Minute)},
	}
	for _, tc := range cases {
		was := sls[3].expect
		s.lineSlowerThanModel(tc.sl, tc.at)
		if !sls[3].expect.Equal(was) {
			t.Errorf("%s: the model moved by %v", tc.name, sls[3].expect.Sub(was))
		}
	}
}

// ACKs of D packets that queued behind one another, coming a 9600 bps
// line time apart on a link stated as 115200, teach the model the
// line's speed: the packets written next are timed at 9600, not only
// shifted. Gaps after an idle line or a packet sent again teach nothing,
// and a line faster than stated leaves the stated speed.
func TestLineModelLearnsSlowerSpeed(t *testing.T) {
	const stated, real, size = 115200, 9600, 1000
	per := lineTime(size, real)
	s := &Session{cfg: Config{LineSpeed: stated}}
	t0 := time.Now()
	ack := func(sl *slot, at time.Time) { s.observeLineSpeed(sl, at) }
	// Packets all written at t0, acknowledged one real line time apart.
	for i := range 12 {
		ack(&slot{typ: 'D', sends: 1, sentAt: t0, wire: make([]byte, size)}, t0.Add(time.Duration(i+1)*per))
	}
	if got := s.lineSpeed(); got < real*95/100 || got > real*105/100 {
		t.Fatalf("learnt %d bps, want about %d", got, real)
	}
	s.linkFree = time.Time{}
	start := time.Now()
	if d := s.occupyLine(size).Sub(start); d < per*95/100 || d > per*105/100 {
		t.Errorf("a packet written now is modelled across in %v, want about %v", d, per)
	}

	learnt := s.lineSpeed()
	last := t0.Add(12 * per)
	// Written after the last ACK (the line may have idled): no sample.
	ack(&slot{typ: 'D', sends: 1, sentAt: last.Add(time.Second), wire: make([]byte, size)}, last.Add(100*time.Second))
	// A packet sent again in the gap: no sample.
	last = last.Add(100 * time.Second)
	s.stats.Retransmissions++
	ack(&slot{typ: 'D', sends: 1, sentAt: t0, wire: make([]byte, size)}, last.Add(100*time.Second))
	// Not a D, or sent twice: not counted at all.
	ack(&slot{typ: 'Z', sends: 1, sentAt: t0}, last.Add(200*time.Second))
	ack(&slot{typ: 'D', sends: 2, sentAt: t0, wire: make([]byte, size)}, last.Add(300*time.Second))
	if got := s.lineSpeed(); got != learnt {
		t.Errorf("samples that should teach nothing moved the speed from %d to %d", learnt, got)
	}

	// A line faster than stated: the stated speed again, no faster.
	last = last.Add(100 * time.Second)
	for i := range 40 {
		ack(&slot{typ: 'D', sends: 1, sentAt: t0, wire: make([]byte, size)}, last.Add(time.Duration(i+1)*time.Millisecond))
	}
	if got := s.lineSpeed(); got != stated {
		t.Errorf("after fast ACKs the model runs at %d bps, want the stated %d", got, stated)
	}
}
