package kermit

import (
	"net"
	"testing"

	"kerf/framing"
)

// An E that passed only the 6-bit check while a stronger one is agreed
// is damage until a second comes with no good packet between: a D whose
// type a bit error made E passes that check one time in 64, and a
// restarted peer answers every packet with its E.
func TestWeakEBelievedWhenRepeated(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	s := NewSession(a, DefaultConfig())
	defer s.Close()
	weakE := inPacket{Packet: framing.Packet{Type: 'E', Data: []byte("gone")}, weak: true}
	good := inPacket{Packet: framing.Packet{Type: 'Y', Seq: 5}}
	for i, step := range []struct {
		p      inPacket
		wantE  bool // taken as the peer's E
		wantOK bool // not damage
	}{
		{weakE, false, false}, // the first: damage
		{good, false, true},   // a good packet: the next weak E is a first again
		{weakE, false, false},
		{weakE, true, true}, // the second in a row: believed
		{inPacket{Packet: framing.Packet{Type: 'E', Data: []byte("strong")}}, true, true}, // one that passed the agreed check: at once
	} {
		p, _, err := s.got(step.p)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if gotE := !p.bad && p.Type == 'E'; gotE != step.wantE || !p.bad != step.wantOK {
			t.Errorf("step %d: got %+v; want E %v, good %v", i, p, step.wantE, step.wantOK)
		}
	}
	if s.stats.BadPackets != 2 {
		t.Errorf("%d bad packets counted; want 2", s.stats.BadPackets)
	}
}
