package datachan

import (
	"fmt"
	"sync/atomic"
	"time"
)

// A data connection whose far end stops forwarding it alone (a proxy or
// middlebox hung on one flow: QA y stopped one socat child) is no stall
// its sender can see: the hop before it still acknowledges and shuts the
// window, and its probes are answered (stallwatch.go). The transfer then
// waited for the idle timeout, 5 minutes. The receiving side sees it:
// its reader waits on that connection and nothing comes, a file the
// data is for has had its gap-free prefix stand still meanwhile, and
// the other connections were heard from since: their data, or the
// answers to their keepalives (in an outage none is). watchHeld fails
// the Path then, with ErrStalled: the session reconnects and resumes,
// keeping what came (AbandonKept).
//
// A reader that does not read (its disk writer behind) is not waiting
// on its connection, and a connection with nothing to carry (a run of
// small files written on the first free connection) holds up no file.

// heldQuiet is how long a connection's reader must have waited, and a
// file's prefix stood still, for the connection to be suspect, once
// another connection was heard from stallMargin after the prefix
// stopped; heldGrace is how long it is then given. After an outage of
// the whole path each connection retries at its own time, up to the
// capped retransmission timeout apart: the grace is the sending side's
// (stallGrace), so that the last to retry is not taken for held.
const (
	heldQuiet = stallQuiet
	heldGrace = 2*rtoMost + 5*time.Second
	// heldHeard is how lately another connection must have been heard
	// from, at each look, for a suspect to stay so: an outage that
	// begins while one is suspect ends the suspicion. An idle
	// connection is heard from at each keepalive, 15 s apart (Go's).
	heldHeard = 20 * time.Second
)

// monoEpoch makes monotonic times fit an atomic int64 (monoNow).
var monoEpoch = time.Now()

// monoNow is nanoseconds since monoEpoch, on the monotonic clock; never 0.
func monoNow() int64 { return int64(time.Since(monoEpoch)) + 1 }

// readWatch is what watchHeld knows of one connection's reader.
type readWatch struct {
	waiting atomic.Int64 // monoNow when the reader began a Read that has not returned; 0: none
	data    atomic.Int64 // monoNow of the last Read that returned bytes
}

// watchHeld fails the Path when one connection is held (above) for
// grace (heldGrace but for tests).
func (p *Path) watchHeld(grace time.Duration) {
	t := time.NewTicker(stallCheck)
	defer t.Stop()
	suspect := make([]int64, len(p.streams)) // by connection: since when; 0: not
	for {
		select {
		case <-p.failed:
			return
		case <-t.C:
		}
		now := monoNow()
		for i := range p.streams {
			f := p.heldFile(i, now)
			switch {
			case f == nil:
				suspect[i] = 0
			case suspect[i] == 0:
				suspect[i] = now
			case now-suspect[i] >= int64(grace):
				s := p.streams[i]
				p.fail(fmt.Errorf("%w: stream %d (%v to %v): nothing came on it for %v while the other connections were heard from, and file %d waits for its bytes from %d (the path holds this connection: a proxy or middlebox that stopped forwarding it)",
					ErrStalled, s.idx, s.conn.LocalAddr(), s.conn.RemoteAddr(), time.Duration(now-s.in.w.waiting.Load()).Round(time.Second), f.id, f.prefix))
				return
			}
		}
	}
}

// heldFile returns a file that waits, at now, for what connection i
// would bring (above), or nil; its id and prefix are read under p.mu
// and do not change after.
func (p *Path) heldFile(i int, now int64) *recvFile {
	since := p.streams[i].in.w.waiting.Load()
	if since == 0 || now-since < int64(heldQuiet) {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.files {
		if f.dst == nil || f.abandoned || f.stopping || f.allGot() || now-f.prefixMoved < int64(heldQuiet) {
			continue
		}
		// Another connection was heard from after the prefix stopped,
		// and lately: the path works, and this file waits for what it
		// lacks.
		for j := range p.streams {
			if h := p.heardOn(j, now); j != i && h >= f.prefixMoved+int64(stallMargin) && now-h <= int64(heldHeard) {
				return f
			}
		}
	}
	return nil
}

// heardOn is when connection j was last heard from (monoNow): the last
// bytes its reader got, or, where the kernel says (TCP_INFO), the last
// segment that came on it, a keepalive's answer included, which a
// connection with nothing to carry still gets (Go's keepalive: 15 s).
func (p *Path) heardOn(j int, now int64) int64 {
	s := p.streams[j]
	heard := s.in.w.data.Load()
	if st, ok := tcpStateOf(s.conn); ok {
		heard = max(heard, now-int64(st.sinceAck))
	}
	return heard
}
