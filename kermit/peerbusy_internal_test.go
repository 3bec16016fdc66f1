package kermit

import (
	"sync/atomic"
	"testing"
)

// movingPath is a DataPath whose Progress the test moves.
type movingPath struct {
	DataPath
	moved atomic.Int64
}

func (p *movingPath) Progress() int64 { return p.moved.Load() }

// The peer checking its copy is busy until it answers, or, on a data
// path, until its data moves: a resumed send's client sends no packet
// before the file's Z, and if its link is cut later its session must not
// count as busy for minutes (an idle watchdog and a take-over would wait
// on it; review of the take-over).
func TestPeerBusyEndsWhenDataMoves(t *testing.T) {
	cases := []struct {
		name     string
		path     bool
		move     bool
		wantBusy bool
	}{
		{"no data path", false, false, true},
		{"data path, nothing moved", true, false, true},
		{"data path, data moved", true, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Session{cfg: Config{Reliable: true}}
			p := &movingPath{}
			p.moved.Store(7)
			if c.path {
				s.data = p
			}
			s.peerHashes(1<<30, -1)
			if c.move {
				p.moved.Add(1 << 20)
			}
			if got := s.Busy(); got != c.wantBusy {
				t.Errorf("Busy() = %v, want %v", got, c.wantBusy)
			}
		})
	}
}
