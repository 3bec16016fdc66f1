package kermit

import (
	"testing"
	"time"
)

// A sender on a line of known speed keeps about a quarter second of it
// in flight (a sixteenth to C-Kermit), but never less than a round trip
// and a quarter: with 150 ms each way at 115200 bit/s, 300 ms of ACK
// delay left the line idle two thirds of the time (a noisy line's
// transfer to C-Kermit took 51 s, 18.5 s with this).
func TestLineFullKeepsARoundTripInFlight(t *testing.T) {
	s := &Session{}
	s.cfg.LineSpeed = 115200
	s.sw.count = 5
	s.sw.bytes = 2000
	for _, c := range []struct {
		kerf  bool
		least time.Duration
		full  bool
	}{
		{false, 0, true},                       // C-Kermit, no latency known: 720 bytes
		{false, 5 * time.Millisecond, true},    // a short line: the same
		{false, 300 * time.Millisecond, false}, // 4,320 bytes a round trip and a quarter
		{true, 0, false},                       // kerf: a quarter second, 2,880 bytes
		{true, 300 * time.Millisecond, false},
	} {
		s.neg.peerKerf = c.kerf
		s.rtt.least = c.least
		if got := s.lineFull(400); got != c.full {
			t.Errorf("kerf peer %v, round trip %v: lineFull(400) with 2,000 bytes out = %v, want %v", c.kerf, c.least, got, c.full)
		}
	}
	s.neg.peerKerf, s.rtt.least, s.sw.bytes = false, 300*time.Millisecond, 4200
	if !s.lineFull(400) {
		t.Error("more than a round trip and a quarter out, and still not full")
	}
}
