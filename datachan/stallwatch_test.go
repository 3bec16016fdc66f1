package datachan

import (
	"testing"
	"time"
)

// stallJudge, over timelines of two or three connections checked once a
// second: a connection that stops moving while another moves, or is
// heard from idle, is stalled after stallQuiet and the grace, whether
// its path drops it or its peer stops reading it alone; an outage of
// them all, a retry that comes within the grace after it heals, a peer
// that stops reading all of them and an idle connection are not.
func TestStallJudge(t *testing.T) {
	const rto = 15 * time.Second
	grace := stallGrace(rto)
	found := func(at int) int { return at + int((stallQuiet+grace)/time.Second) + 2 }
	// conn is a connection at second s: whether data waits on it, the
	// second it stopped (last moved, or began to wait), the second it
	// last moved, and the second it was last heard from.
	type conn func(s int) (waiting bool, stopped, moved, heard int)
	flowing := func(s int) (bool, int, int, int) { return true, s, s, s }
	// Idle from the start, a keepalive answered every 15 s.
	idle := func(s int) (bool, int, int, int) { return false, s, 0, s - s%15 }
	// Nothing acknowledged from second c on.
	cutAt := func(c int) conn {
		return func(s int) (bool, int, int, int) { return true, min(s, c), min(s, c), min(s, c) }
	}
	// Flowing, then idle from second c on (its data all sent), heard by
	// keepalives.
	doneAt := func(c int) conn {
		return func(s int) (bool, int, int, int) {
			if s < c {
				return true, s, s, s
			}
			return false, s, c, max(c, s-s%15)
		}
	}
	// Silent from..back, flowing again from back.
	outage := func(from, back int) conn {
		return func(s int) (bool, int, int, int) {
			if s >= from && s < back {
				return true, from, from, from
			}
			return true, s, s, s
		}
	}
	// Its peer stops reading it from second c: data waits unsent, the
	// probes for its window are answered.
	unread := func(c int) conn {
		return func(s int) (bool, int, int, int) { return true, min(s, c), min(s, c), s }
	}
	cases := []struct {
		name  string
		conns []conn
		want  int // the connection stalled, or -1
		at    int // the second it is found, at most
	}{
		{"one cut, the others flowing", []conn{cutAt(3), flowing, flowing}, 0, found(3)},
		{"one cut, the other done soon after and idle", []conn{doneAt(4), cutAt(3)}, 1, found(3) + 15},
		{"an outage of all, each back within RTOMax", []conn{outage(10, 101), outage(10, 115)}, -1, 0},
		{"an outage of all, one back after two retries", []conn{outage(10, 100), outage(10, 130)}, -1, 0},
		{"an outage of all, never back", []conn{cutAt(10), cutAt(10), cutAt(10)}, -1, 0},
		{"an outage of all, the idle one's keepalive unanswered", []conn{cutAt(10), func(s int) (bool, int, int, int) { return false, s, 0, min(s-s%15, 10) }}, -1, 0},
		{"a peer that stops reading one, the others read", []conn{unread(5), flowing}, 0, found(5)},
		{"a peer that stops reading all", []conn{unread(5), unread(5), unread(6)}, -1, 0},
		{"an idle connection beside a busy one", []conn{idle, flowing}, -1, 0},
		{"one moving again just within the grace", []conn{outage(10, 10+int((stallQuiet+grace)/time.Second)-1), flowing}, -1, 0},
		{"one moving again just past it", []conn{outage(10, 10+int((stallQuiet+grace)/time.Second)+2), flowing}, 0, found(10) - 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Unix(1e9, 0)
			sec := func(n int) time.Time { return start.Add(time.Duration(n) * time.Second) }
			j := stallJudge{grace: grace, suspect: make([]time.Time, len(c.conns))}
			st := make([]ackState, len(c.conns))
			got, at := -1, 0
			for s := 1; s <= 300 && got < 0; s++ {
				for i, f := range c.conns {
					w, stopped, moved, heard := f(s)
					st[i] = ackState{known: true, waiting: w, stopped: sec(stopped), moved: sec(moved), heard: sec(heard)}
				}
				got, at = j.check(sec(s), st), s
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
		at := now.Add(time.Duration(s) * time.Second)
		if got := j.check(at, []ackState{{}, {known: true, waiting: true, stopped: at, moved: at, heard: at}}); got >= 0 {
			t.Fatalf("connection %d stalled, its state unknown", got)
		}
	}
}
