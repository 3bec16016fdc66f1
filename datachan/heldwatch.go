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
// its reader is in the middle of a block of a file it is receiving and
// nothing comes, while the other connections are heard from (their
// data, or the answers to their keepalives; in an outage none is).
// watchHeld fails the Path then, with ErrStalled: the session
// reconnects and resumes, keeping what came (AbandonKept).
//
// Where the kernel says when data last came on the connection
// (TCP_INFO), that counts too: a read of a TLS data record returns
// nothing until the whole record is in. Only a connection in the middle
// of a block is held: one between blocks has nothing owed (small files go on the first free
// connection; the other connections of a slow link wait while one
// block crosses, review 52), and one whose reader does not read (its
// disk writer behind) is not waiting on it.

// heldQuiet is how long a connection's reader must have waited in the
// middle of a block, with nothing coming, to be suspect; the grace is
// then two of the sender's longest retransmission timeouts and 5 s, as
// the sending side's (stallGrace): after an outage each connection
// retries at its own time, up to that timeout apart, and the last to
// retry is not held.
const heldQuiet = stallQuiet

// heldHeard is how lately another connection must have been heard from,
// at each look, for a suspect to stay so: an outage that begins while
// one is suspect ends the suspicion. An idle connection is heard from
// at each keepalive, 15 s apart (Go's).
const heldHeard = 20 * time.Second

// WithHeldWatch sets the longest retransmission timeout of the peer's
// connections (RTOMax if it says it caps them), from which the grace of
// the watch for a held connection follows; 0 turns the watch off (QUIC:
// its streams share one flow, and its own idle timeout ends a dead
// one). The default is RTOUncapped.
func WithHeldWatch(peerRTO time.Duration) Option {
	return func(c *config) {
		c.heldGrace = 0
		if peerRTO > 0 {
			c.heldGrace = stallGrace(peerRTO)
		}
	}
}

// monoEpoch makes monotonic times fit an atomic int64 (monoNow).
var monoEpoch = time.Now()

// monoNow is nanoseconds since monoEpoch, on the monotonic clock; never 0.
func monoNow() int64 { return int64(time.Since(monoEpoch)) + 1 }

// readWatch is what watchHeld knows of one connection's reader.
type readWatch struct {
	waiting atomic.Int64 // monoNow when the reader began a Read that has not returned; 0: none
	data    atomic.Int64 // monoNow of the last Read that returned bytes
	// mid: the reader is reading the payload of the block at off of
	// file (a watcher may see the three out of step for a moment).
	mid  atomic.Bool
	file atomic.Uint32
	off  atomic.Uint64
}

func (w *readWatch) reading(file uint32, off uint64) {
	w.file.Store(file)
	w.off.Store(off)
	w.mid.Store(true)
}

func (w *readWatch) between() { w.mid.Store(false) }

// watchHeld fails the Path when one connection has been held (above)
// for grace.
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
		for i, s := range p.streams {
			since, file, off, ok := p.held(i, now)
			switch {
			case !ok:
				suspect[i] = 0
			case suspect[i] == 0:
				suspect[i] = now
			case now-suspect[i] >= int64(grace):
				p.fail(fmt.Errorf("%w: stream %d (%v to %v): nothing came on it for %v in the middle of the block at %d of file %d, while the other connections were heard from (the path holds this connection: a proxy or middlebox that stopped forwarding it)",
					ErrStalled, s.idx, s.conn.LocalAddr(), s.conn.RemoteAddr(), time.Duration(now-since).Round(time.Second), off, file))
				return
			}
		}
	}
}

// held reports whether connection i is held at now (above): since when
// it has waited, in the middle of which block.
func (p *Path) held(i int, now int64) (since int64, file uint32, off uint64, ok bool) {
	s := p.streams[i]
	w := &s.in.w
	since = w.waiting.Load()
	if since == 0 || !w.mid.Load() {
		return 0, 0, 0, false
	}
	if st, ok := tcpStateOf(s.conn); ok {
		// Bytes coming that the read does not return yet (a TLS data
		// record of 256 KiB takes half a minute at 8 KB/s): it stopped
		// when they did.
		since = max(since, now-int64(st.sinceData))
	}
	if now-since < int64(heldQuiet) {
		return 0, 0, 0, false
	}
	file, off = w.file.Load(), w.off.Load()
	p.mu.Lock()
	f := p.files[file]
	waited := f != nil && f.dst != nil && !f.abandoned && !f.stopping && !f.allGot()
	p.mu.Unlock()
	if !waited {
		return 0, 0, 0, false // a file let go, or one parked: nothing waits on it yet
	}
	// Another connection was heard from after this one stopped, and
	// lately: the path works.
	for j := range p.streams {
		if h := p.heardOn(j, now); j != i && h >= since+int64(stallMargin) && now-h <= int64(heldHeard) {
			return since, file, off, true
		}
	}
	return 0, 0, 0, false
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
