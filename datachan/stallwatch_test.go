package datachan

import (
	"testing"
	"time"
)

// stallJudge, over timelines of two or three connections checked once a
// second: a connection left unacknowledged while another is acknowledged
// is stalled after stallQuiet and the grace; an outage of them all, a
// retry that comes within the grace after it heals, a peer that stops
// reading (nothing unacknowledged) and an idle connection are not.
func TestStallJudge(t *testing.T) {
	const rto = 15 * time.Second
	grace := stallGrace(rto)
	// conn is a connection's state at second s: whether it has data
	// unacknowledged, and the second its last acknowledgement came.
	type conn func(s int) (unacked bool, lastAck int)
	flowing := func(s int) (bool, int) { return true, s } // acknowledged every second
	idle := func(s int) (bool, int) { return false, 0 }   // nothing out since the start
	cutAt := func(c int) conn {                           // nothing acknowledged from second c on
		return func(s int) (bool, int) { return true, min(s, c) }
	}
	outage := func(from, to, back int) conn { // silent from..to; acknowledged again at back
		return func(s int) (bool, int) {
			switch {
			case s < from:
				return true, s
			case s < back:
				return true, from
			}
			return true, s
		}
	}
	zeroWindow := func(from int) conn { // all acknowledged, the peer not reading
		return func(s int) (bool, int) { return s < from, min(s, from) }
	}
	cases := []struct {
		name  string
		conns []conn
		want  int // the connection stalled, or -1
		at    int // the second it is found, at most
	}{
		{"one cut, the others flowing", []conn{cutAt(3), flowing, flowing}, 0, 3 + int((stallQuiet+grace)/time.Second) + 2},
		{"one cut, the other idle after its last ack", []conn{flowing, cutAt(10)}, 1, 10 + int((stallQuiet+grace)/time.Second) + 2},
		{"an outage of all, each back within RTOMax", []conn{outage(10, 100, 101), outage(10, 100, 115)}, -1, 0},
		{"an outage of all, one back after two retries", []conn{outage(10, 100, 100), outage(10, 100, 130)}, -1, 0},
		{"an outage of all, never back", []conn{cutAt(10), cutAt(10), cutAt(10)}, -1, 0},
		{"a peer that stops reading", []conn{zeroWindow(5), flowing}, -1, 0},
		{"an idle connection beside a busy one", []conn{idle, flowing}, -1, 0},
		{"one acknowledged again just within the grace", []conn{outage(10, 10, 10+int((stallQuiet+grace)/time.Second)-1), flowing}, -1, 0},
		{"one acknowledged again just past it", []conn{outage(10, 10, 10+int((stallQuiet+grace)/time.Second)+2), flowing}, 0, 10 + int((stallQuiet+grace)/time.Second) + 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Unix(1e9, 0)
			j := stallJudge{grace: grace, suspect: make([]time.Time, len(c.conns))}
			st := make([]ackState, len(c.conns))
			got, at := -1, 0
			for s := 1; s <= 300 && got < 0; s++ {
				for i, f := range c.conns {
					u, a := f(s)
					st[i] = ackState{known: true, unacked: u, lastAck: start.Add(time.Duration(a) * time.Second)}
				}
				got, at = j.check(start.Add(time.Duration(s)*time.Second), st), s
			}
			if got != c.want || got >= 0 && at > c.at {
				t.Errorf("stalled: connection %d at second %d; want %d by %d", got, at, c.want, c.at)
			}
		})
	}
	// A connection the kernel says nothing of is never judged.
	j := stallJudge{grace: grace, suspect: make([]time.Time, 2)}
	now := time.Unix(1e9, 0)
	for s := range 200 {
		if got := j.check(now.Add(time.Duration(s)*time.Second), []ackState{{}, {known: true, unacked: true, lastAck: now.Add(time.Duration(s) * time.Second)}}); got >= 0 {
			t.Fatalf("connection %d stalled, its state unknown", got)
		}
	}
}
