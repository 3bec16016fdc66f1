package kermit

import (
	"testing"
	"time"

	"kerf/framing"
)

// A stop-and-wait sender counts the wait for each ACK in a packet's
// cost: on a long link its packets are long even before the line has
// shown it is clean, and on a short one they stay what the loss rate
// alone makes them. A windowed sender hides the wait and ignores it.
func TestDataLenCountsTheTurnaround(t *testing.T) {
	const maxData = 9000
	for _, c := range []struct {
		name       string
		window     int
		turnaround time.Duration
		speed      int
		sent, lost float64 // bytes the adapter has seen, packets lost
		min, max   int
	}{
		// 50 KB clean: a tenth of a loss assumed, sqrt(12/2e-6) = 2,449.
		{"no ACK answered yet", 1, 0, 115200, 50000, 0, 2400, 2500},
		// 2 ms is 23 bytes of line: sqrt(35/2e-6) = 4,183.
		{"short link", 1, 2 * time.Millisecond, 115200, 50000, 0, 4100, 4300},
		// 300 ms: 3,456 bytes of line a packet; sqrt(3,468/2e-6) > 9,000.
		{"long link", 1, 300 * time.Millisecond, 115200, 50000, 0, maxData, maxData},
		{"long link, windowed", 4, 300 * time.Millisecond, 115200, 50000, 0, 2400, 2500},
		{"long link, speed unknown", 1, 300 * time.Millisecond, 0, 50000, 0, 2400, 2500},
		// BER 1e-5 (p about 8e-5 a byte): 387 without the wait, 6,585
		// with 300 ms of it, 661 with 2 ms.
		{"long link, noisy", 1, 300 * time.Millisecond, 115200, 1e6, 80 - 0.1, 6400, 6700},
		{"short link, noisy", 1, 2 * time.Millisecond, 115200, 1e6, 80 - 0.1, 640, 680},
		{"no ACK answered yet, noisy", 1, 0, 115200, 1e6, 80 - 0.1, 380, 395},
		// Early on a noisy line (one loss in the first 700 bytes) the
		// loss rate is not known yet: a 5 ms wait (58 bytes) alone would
		// ask for sqrt(70/(1.1/700)) = 211 bytes (a packet of 320, sized
		// so, got through none of G-Kermit's ten tries at BER 1e-3);
		// sqrt(12/(1.1/700)) = 87 without it, and at most what half would
		// get through at (1+3)/700: 121.
		{"early, noisy", 1, 5 * time.Millisecond, 115200, 700, 1, 85, 121},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Session{}
			s.cfg.LineSpeed = c.speed
			s.neg.window, s.neg.maxData, s.neg.shortData = c.window, maxData, 90
			s.neg.peerKerf, s.neg.check = true, framing.CheckType(3)
			s.adapt.init(maxData)
			s.adapt.cap = maxData // slow start over
			s.adapt.bytes, s.adapt.losses = c.sent, c.lost
			s.dTurnaround = c.turnaround
			if got := s.dataLen(); got < c.min || got > c.max {
				t.Errorf("dataLen = %d, want %d..%d", got, c.min, c.max)
			}
		})
	}
}

// Only a D packet's ACK, sent once, times the turnaround: an F or A is
// answered after the peer's file handling.
func TestTurnaroundFromDataPacketsOnly(t *testing.T) {
	s := &Session{}
	s.rtt.init(time.Second)
	for _, c := range []struct {
		typ   byte
		sends int
		ago   time.Duration
		want  time.Duration // dTurnaround after it, about
	}{
		{'F', 1, 500 * time.Millisecond, 0},
		{'A', 1, 400 * time.Millisecond, 0},
		{'D', 2, 5 * time.Millisecond, 0}, // a resent one says nothing
		{'D', 1, 300 * time.Millisecond, 300 * time.Millisecond},
		{'D', 1, 200 * time.Millisecond, 200 * time.Millisecond},
		{'D', 1, 250 * time.Millisecond, 200 * time.Millisecond}, // the least is kept
	} {
		sl := &slot{typ: c.typ, sends: c.sends, expect: time.Now().Add(-c.ago), sentAt: time.Now()}
		s.acked(sl, nil)
		if d := s.dTurnaround - c.want; d < 0 || d > 50*time.Millisecond {
			t.Fatalf("after %c (sends %d, %v ago): turnaround %v, want about %v", c.typ, c.sends, c.ago, s.dTurnaround, c.want)
		}
	}
}

// An ACK that comes before the line model expected it (a turnaround of
// 0) is the least there can be: later, longer ones do not replace it.
func TestTurnaroundZeroIsKept(t *testing.T) {
	s := &Session{}
	s.rtt.init(time.Second)
	s.acked(&slot{typ: 'D', sends: 1, expect: time.Now().Add(time.Second), sentAt: time.Now()}, nil)
	s.acked(&slot{typ: 'D', sends: 1, expect: time.Now().Add(-300 * time.Millisecond), sentAt: time.Now()}, nil)
	if s.dTurnaround > time.Millisecond {
		t.Fatalf("turnaround %v after an early ACK, want about 0", s.dTurnaround)
	}
}
