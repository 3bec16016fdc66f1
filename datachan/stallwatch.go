package datachan

import (
	"fmt"
	"time"
)

// A data connection whose path stops carrying it while its siblings'
// go on (a middlebox dropping one flow, one ECMP path gone) keeps the
// blocks in its socket until TCP gives up on it: about 160 s with the
// retransmission timeout capped (RTOMax), and the whole transfer waits
// for them (QA y: one of four connections dropped 3 s in, the send
// reconnected and resumed after 160 s). The sending side sees it first:
// the connection has data out and no acknowledgement comes, while the
// others' do. watchStalls asks the kernel (TCP_INFO) once a second and
// fails the Path when one connection has been so for stallGrace: the
// session is lost, and reconnects and resumes as for a reset.
//
// A whole link that goes silent is an outage, ridden out as before: no
// connection is acknowledged, so none is suspect. When it heals, the
// connections retry at their own times, up to RTOMax apart, so the
// grace is two of those and a margin (the first retry may be lost too).
// A peer that stops reading (zero window) answers the probes for its
// window, and is not taken for a stall; one whose path went while its
// window was shut answers none, and is.

// stallQuiet is how long a connection must have gone unacknowledged with
// data out, and another been acknowledged since, to be suspect.
const stallQuiet = 5 * time.Second

// stallCheck is how often the connections are looked at.
const stallCheck = time.Second

// stallGrace is how long a suspect connection is given, with the
// retransmission timeout capped at rtoMax.
func stallGrace(rtoMax time.Duration) time.Duration { return 2*rtoMax + 5*time.Second }

// ackState is what the kernel says of a connection's acknowledgements.
type ackState struct {
	known   bool      // the kernel said (a TCP connection on Linux)
	unacked bool      // data sent and not yet acknowledged, or window probes unanswered
	lastAck time.Time // when an acknowledgement last came
}

// stallJudge tells, from each connection's ackState at each check, when
// one has stalled.
type stallJudge struct {
	grace   time.Duration
	suspect []time.Time // by connection: when it became suspect; zero: it is not
}

// check returns the connection that has stalled, or -1.
func (j *stallJudge) check(now time.Time, st []ackState) int {
	for i, s := range st {
		if !s.known || !s.unacked || now.Sub(s.lastAck) < stallQuiet || !ackedSince(st, i, s.lastAck.Add(stallQuiet)) {
			j.suspect[i] = time.Time{}
			continue
		}
		if j.suspect[i].IsZero() {
			j.suspect[i] = now
			continue
		}
		if now.Sub(j.suspect[i]) >= j.grace {
			return i
		}
	}
	return -1
}

// ackedSince reports whether a connection other than i was acknowledged
// at or after t: the path works.
func ackedSince(st []ackState, i int, t time.Time) bool {
	for k, s := range st {
		if k != i && s.known && !s.lastAck.Before(t) {
			return true
		}
	}
	return false
}

// watchStalls runs stallJudge over the Path's connections until the
// Path ends; it is started only where the kernel tells what it needs
// (stallWatchable).
func (p *Path) watchStalls(grace time.Duration) {
	j := stallJudge{grace: grace, suspect: make([]time.Time, len(p.streams))}
	st := make([]ackState, len(p.streams))
	t := time.NewTicker(stallCheck)
	defer t.Stop()
	for {
		select {
		case <-p.failed:
			return
		case <-t.C:
		}
		now := time.Now()
		for i, s := range p.streams {
			st[i] = ackStateOf(s.conn, now)
		}
		if i := j.check(now, st); i >= 0 {
			s := p.streams[i]
			p.fail(fmt.Errorf("%w: stream %d (%v): no acknowledgement for %v with data out, while the other connections' came (the path drops its packets)",
				ErrStalled, s.idx, s.conn.RemoteAddr(), now.Sub(st[i].lastAck).Round(time.Second)))
			return
		}
	}
}
