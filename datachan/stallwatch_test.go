package datachan

import (
	"testing"
	"time"
)

// stallJudge, over timelines of two or three connections checked once a
// second: a connection with data waiting that is heard from no more
// while another is (flowing, or idle with its keepalives) is stalled
// after stallQuiet and the grace; an outage of them all, a retry that
// comes within the grace after it heals, a connection read slowly or
// not at all (its window's probes answered; review 50) and an idle one
// are not.
func TestStallJudge(t *testing.T) {
	const rto = 15 * time.Second
	grace := stallGrace(rto)
	found := func(at int) int { return at + int((stallQuiet+grace)/time.Second) + 2 }
	// conn is a connection at second s: whether data waits on it, and
	// the second it was last heard from (its stop, while it waits, is
	// the later of that and when it began to wait: here, the start).
	type conn func(s int) (waiting bool, heard int)
	flowing := func(s int) (bool, int) { return true, s }
	// Idle from the start, a keepalive answered every 15 s.
	idle := func(s int) (bool, int) { return false, s - s%15 }
	// Nothing heard from second c on.
	cutAt := func(c int) conn {
		return func(s int) (bool, int) { return true, min(s, c) }
	}
	// Flowing, then idle from second c on (its data all sent), heard by
	// keepalives.
	doneAt := func(c int) conn {
		return func(s int) (bool, int) {
			if s < c {
				return true, s
			}
			return false, max(c, s-s%15)
		}
	}
	// Silent from..back, flowing again from back.
	outage := func(from, back int) conn {
		return func(s int) (bool, int) {
			if s >= from && s < back {
				return true, from
			}
			return true, s
		}
	}
	// Its peer reads it slowly or not at all from second c: data waits
	// behind a shut window, whose probes are answered (every 15 s at
	// most, the capped timeout).
	unread := func(c int) conn {
		return func(s int) (bool, int) {
			if s < c {
				return true, s
			}
			return true, c + (s-c)/15*15
		}
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
		{"an outage of all, the idle one's keepalive unanswered", []conn{cutAt(10), func(s int) (bool, int) { return false, min(s-s%15, 10) }}, -1, 0},
		{"one read slowly or not at all, the others flowing", []conn{unread(5), flowing, flowing}, -1, 0},
		{"all unread", []conn{unread(5), unread(5), unread(6)}, -1, 0},
		{"an idle connection beside a busy one", []conn{idle, flowing}, -1, 0},
		{"one heard again just within the grace", []conn{outage(10, 10+int((stallQuiet+grace)/time.Second)-1), flowing}, -1, 0},
		{"one heard again just past it", []conn{outage(10, 10+int((stallQuiet+grace)/time.Second)+2), flowing}, 0, found(10) - 1},
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
					w, heard := f(s)
					st[i] = ackState{known: true, waiting: w, stopped: sec(heard), heard: sec(heard)}
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
		if got := j.check(at, []ackState{{}, {known: true, waiting: true, stopped: at, heard: at}}); got >= 0 {
			t.Fatalf("connection %d stalled, its state unknown", got)
		}
	}
}
