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
// reconnected and resumed after 160 s). So does one whose far end stops
// reading it alone (a proxy hung on one flow), until the idle timeout
// (QA y: 5 minutes). The sending side sees it first: the connection has
// data waiting (out and unacknowledged, or not sent for a shut window)
// and what the peer acknowledges of it no longer grows, while the
// others' does. watchStalls asks the kernel (TCP_INFO) once a second and
// fails the Path when one connection has been so for stallGrace: the
// session is lost, and reconnects and resumes as for a reset.
//
// A whole link that goes silent is an outage, ridden out as before: no
// connection moves, so none is suspect. When it heals, the connections
// retry at their own times, up to RTOMax apart, so the grace is two of
// those and a margin (the first retry may be lost too). A peer that
// stops reading everything (its disk stalled) moves none either.

// stallQuiet is how long a connection must have had data waiting with
// nothing of it acknowledged to be suspect, once another was heard
// from stallMargin after it stopped.
const stallQuiet = 5 * time.Second

// stallMargin is how much later than a connection stopped another must
// have been heard for the path to count as working: the connections of
// a path that goes silent heard last within a round trip or so of each
// other.
const stallMargin = 2 * time.Second

// stallCheck is how often the connections are looked at.
const stallCheck = time.Second

// stallGrace is how long a suspect connection is given, with the
// retransmission timeout capped at rtoMax.
func stallGrace(rtoMax time.Duration) time.Duration { return 2*rtoMax + 5*time.Second }

// ackState is a connection's state for stallJudge.
type ackState struct {
	known   bool // the kernel said (a TCP connection on Linux)
	waiting bool // data waiting: out and unacknowledged, or not sent (a shut window)
	// stopped is since when the connection has had data waiting and
	// none of it acknowledged: the later of when it began to wait and
	// when what the peer acknowledged last grew.
	stopped time.Time
	// moved is when what the peer acknowledged last grew; heard, when
	// an acknowledgement of anything (a keepalive's too) last came.
	moved, heard time.Time
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
		if !s.known || !s.waiting || now.Sub(s.stopped) < stallQuiet || !heardSince(st, i, s.stopped.Add(stallMargin)) {
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

// heardSince reports whether a connection other than i showed at or
// after t that the path works and the peer reads: its data was
// acknowledged, or, with none waiting, it was heard from (an idle
// connection's keepalive). One heard only with data waiting (a shut
// window's probes answered) shows neither: a peer that stops reading
// every connection (its disk stalled) stalls none of them.
func heardSince(st []ackState, i int, t time.Time) bool {
	for k, s := range st {
		if k != i && s.known && (!s.moved.Before(t) || !s.waiting && !s.heard.Before(t)) {
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
	acked := make([]uint64, len(p.streams))
	for i := range st {
		st[i].stopped, st[i].moved = time.Now(), time.Now()
	}
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
			k, ok := tcpStateOf(s.conn)
			if ok && k.acked != acked[i] {
				st[i].moved = now
			}
			if ok && (k.acked != acked[i] || !st[i].waiting) {
				// Moving, or not waiting: a stop, if one comes, is from
				// now.
				st[i].stopped = now
			}
			acked[i] = k.acked
			st[i].known, st[i].waiting = ok, ok && k.waiting
			st[i].heard = now.Add(-k.sinceAck)
		}
		if i := j.check(now, st); i >= 0 {
			s := p.streams[i]
			p.fail(fmt.Errorf("%w: stream %d (%v): nothing of its data acknowledged for %v while the other connections' was (the path drops its packets, or its far end stopped reading it)",
				ErrStalled, s.idx, s.conn.RemoteAddr(), now.Sub(st[i].stopped).Round(time.Second)))
			return
		}
	}
}
