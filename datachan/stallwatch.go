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
// the connection has data waiting (out and unacknowledged, or window
// probes out) and no acknowledgement of anything comes, while the
// others' do. watchStalls asks the kernel (TCP_INFO) once a second and
// fails the Path when one connection has been so for stallGrace: the
// session is lost, and reconnects and resumes as for a reset.
//
// A connection whose far end reads it slowly, or not at all, is no
// stall: its shut window's probes are answered. (A reader that wrote
// the other streams' blocks to a slow disk left its own unread for
// minutes, and is nothing to give up on; review 50. So a proxy hung on
// one flow still waits for the idle timeout, QA y.)
//
// A whole link that goes silent is an outage, ridden out as before: no
// connection is heard from, so none is suspect. When it heals, the
// connections retry at their own times, up to RTOMax apart, so the
// grace is two of those and a margin (the first retry may be lost too).

// RTOMax caps the TCP retransmission timeout of kerf's connections
// (TCP_RTO_MAX_MS, Linux 6.15 and later; older kernels keep their 120 s
// cap). After an outage the kernel retransmits at exponentially growing
// intervals up to the cap, so a connection whose last try came just
// before the link healed sat idle up to two minutes more: the data
// streams that had tried later had finished, and the file waited for
// the last one (QA, wanem: a 120 s outage). With 15 s the wait after
// healing is about 15 s at most (19 s seen when a stream's last ACKs
// were lost in the cut). The cap also shortens how long a sending end
// keeps retransmitting before it gives up (tcp_retries2, 15 tries):
// about 160 s instead of 15 minutes. Between kerf peers that is no
// loss: the idle connections (control while a file moves, a receiving
// end's data) carry only Go's keepalive (15 s, then 9 probes 15 s
// apart), which ends them after 120-135 s of outage (the probe clock
// starts at the last traffic), and the transfer with them (WAN QA: 125 s
// survived, 130 s not). A classic peer sends no keepalives, so its
// sessions are uncapped (UncapRTO). Keep the sender's give-up above the
// keepalive's: a 10 s cap would end senders at about 112 s.
// docs/benchmarks.md, "Outages".
// (Only Linux can set the cap, CapRTO; the value is named everywhere.)
const RTOMax = 15 * time.Second

// RTOUncapped is the kernel's own cap on the retransmission timeout: a
// peer's longest where it does not say it caps it (a kernel without
// TCP_RTO_MAX_MS, another system, a kerf from before it said).
const RTOUncapped = 2 * time.Minute

// stallQuiet is how long a connection must have had data waiting with
// no acknowledgement coming to be suspect, once another was heard from
// stallMargin after it stopped.
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
	// heard nothing: the later of when it began to wait and when an
	// acknowledgement (of anything) last came.
	stopped time.Time
	// heard is when an acknowledgement of anything (a keepalive's, a
	// window probe's too) last came.
	heard time.Time
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

// heardSince reports whether a connection other than i was heard from
// (an acknowledgement of anything: its data, a keepalive, a window
// probe) at or after t: the path works.
func heardSince(st []ackState, i int, t time.Time) bool {
	for k, s := range st {
		if k != i && s.known && !s.heard.Before(t) {
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
	for i := range st {
		st[i].stopped = time.Now()
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
			heard := now.Add(-k.sinceAck)
			switch {
			case !ok || !st[i].waiting:
				// Not waiting: a stop, if one comes, is from now.
				st[i].stopped = now
			case heard.After(st[i].stopped):
				// Any acknowledgement, a shut window's probe answered
				// too: the peer is there, only slow to read (review 50:
				// a stream whose reader wrote the others' blocks to a
				// slow disk was taken for stalled when its stop was
				// when its data was last acknowledged).
				st[i].stopped = heard
			}
			st[i].known, st[i].waiting = ok, ok && k.waiting
			st[i].heard = heard
		}
		if i := j.check(now, st); i >= 0 {
			s := p.streams[i]
			// Both ends named: a client's connections share the
			// server's address, and only their own ports tell them
			// apart (QA ws51).
			p.fail(fmt.Errorf("%w: stream %d (%v to %v): no acknowledgement for %v with data out, while the other connections' came (the path drops its packets)",
				ErrStalled, s.idx, s.conn.LocalAddr(), s.conn.RemoteAddr(), now.Sub(st[i].stopped).Round(time.Second)))
			return
		}
	}
}
