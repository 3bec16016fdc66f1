package filestore

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A Holder is what a Dir's partial files are held for: on a server, one
// session. Another session of the same process that finds one of them
// locked asks the holder how long it has been silent; one silent for
// Dir.TakeOverAfter is asked to let go (Release), and the file is taken
// over. This is for a client that lost its link and runs again with
// --resume: its old session on the server sits on a dead connection
// (nothing tells a server that a cut-off peer is gone, short of its idle
// timeout), holding the very partial the new run wants.
type Holder interface {
	// LastMoved is when the holder was last seen to move data or hear
	// from its peer (now while it works, or reads a file for a check).
	LastMoved() time.Time
	// Release ends the holder's work, so that its files are let go
	// (kept, for a resume); why says what was taken and why, by the
	// Holder (possibly nil) of the Dir that takes it.
	Release(why string, by Holder)
}

// fileID names a file by device and inode: what a locked partial is,
// whatever it is called.
type fileID struct{ dev, ino uint64 }

// holders maps partial files locked in this process to their Dir's
// Holder (Dirs without one register nothing).
var holders sync.Map // fileID -> Holder

// Waits for a locked partial's holder (see waitForHolder).
const (
	// releaseWait bounds the wait for a released holder to let go: a
	// server's session closes its connection 2 s after it is cancelled
	// (time to send an E packet), then ends its files.
	releaseWait = 5 * time.Second
)

// holderCounts counts the Holders whose Dirs wait for a partial another
// holds (waitForHolder), safe for concurrent use.
type holderCounts struct {
	mu sync.Mutex
	n  map[Holder]int
}

var waitingHolders holderCounts

func (c *holderCounts) add(h Holder, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[Holder]int{}
	}
	if c.n[h] += n; c.n[h] <= 0 {
		delete(c.n, h)
	}
}

func (c *holderCounts) has(h Holder) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[h] > 0
}

// holderWatch is what a Dir has seen of another session holding a
// partial it wants.
type holderWatch struct {
	first         time.Time // first look (zero: none yet)
	lastMoved     time.Time // the holder's LastMoved at the latest look
	working       bool      // it moved while watched: never taken over
	released      bool
	releaseWaited time.Duration
}

// register notes that f, locked and identified, is held for d's Holder.
func (d *Dir) register(f *tempFile) {
	if d.Holder == nil {
		return
	}
	f.holder = d.Holder
	holders.Store(fileID{f.dev, f.ino}, d.Holder)
}

// unregister forgets t's holder; called once its descriptor (and so its
// lock) is closed.
func (t *tempFile) unregister() {
	if t.holder != nil {
		holders.CompareAndDelete(fileID{t.dev, t.ino}, t.holder)
		t.holder = nil
	}
}

// holderOf returns the Holder of the partial open (unlocked) as f, or
// nil: one held by another process, by a Dir without a Holder, or
// already let go.
func holderOf(f *tempFile) Holder {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(f.fd, &st) }); err != nil {
		return nil
	}
	h, ok := holders.Load(fileID{uint64(st.Dev), uint64(st.Ino)})
	if !ok {
		return nil
	}
	return h.(Holder)
}

// waitForHolder decides what Create does about rel's partial, locked by
// another session (h, if of this process; see holderOf): wait (it has
// slept, and Create tries again) or give up (false: ErrBusy). A holder
// of this process is watched: one silent throughout is released once
// its silence reaches TakeOverAfter and waited for (releaseWait) to let
// go. Any other holder, and one that moves while watched (two live
// sessions sending one name: the second is refused), is waited for
// briefly (busyGrace over the Dir's life: a killed client's session the
// server is about to see end), as before take-overs. first: this is
// the Create's first look.
func (d *Dir) waitForHolder(h Holder, rel string, first bool) bool {
	// What this Dir holds committed in a batch goes to its names first:
	// another session may be waiting for one of them as this one waits
	// for its (two clients sending the same names in opposite orders:
	// each held what the other wanted, both waited out TakeOverAfter,
	// and both were taken over; QA ai).
	if len(d.pending) > 0 || d.flushing != nil {
		d.flushPending()
	}
	if h != nil && h != d.Holder && d.TakeOverAfter > 0 {
		if wait, decided := d.watchHolder(h, rel, first); decided {
			return wait
		}
	}
	if d.busyWaited < busyGrace {
		d.busyWaited += busyPoll
		return d.pause()
	}
	return false
}

// watchHolder is waitForHolder's part for a holder of this process;
// decided is false once the holder has shown it works. Each look
// compares the holder's LastMoved with the last look's: a later one
// means it moved in between (LastMoved samples its progress at every
// call, so a move between two looks is seen at the second). One clock,
// the holder's: two readings of durations from two clocks took a look
// delayed on a loaded host for a move (review).
//
// A holder found at work stays so for a later Create (first: its first
// look) while it has moved since it was last looked at; one silent since
// is watched afresh, and taken over once silent for TakeOverAfter
// (review 55: once seen at work, it was never taken over by that Dir).
// One released stays so.
func (d *Dir) watchHolder(h Holder, rel string, first bool) (wait, decided bool) {
	if d.watches == nil {
		d.watches = map[Holder]*holderWatch{}
	}
	w := d.watches[h]
	if w != nil && w.working && first {
		if moved := h.LastMoved(); moved.After(w.lastMoved) || waitingHolders.has(h) {
			w.lastMoved = moved
			return false, false
		}
		w = nil
	}
	if w == nil {
		w = &holderWatch{}
		d.watches[h] = w
	}
	switch {
	case w.working:
		return false, false
	case w.released:
		if w.releaseWaited >= releaseWait {
			return false, true
		}
		w.releaseWaited += busyPoll
		return d.pause(), true
	}
	moved := h.LastMoved()
	now := time.Now()
	if !w.first.IsZero() && moved.After(w.lastMoved) || waitingHolders.has(h) {
		// It moved, or it waits for a partial itself (another
		// session's, maybe this one's: a cycle of two live sessions,
		// neither of which would ever move): it works, and this one is
		// refused after the grace, as two live sessions sending one
		// name are.
		w.working, w.lastMoved = true, moved
		return false, false
	}
	if w.first.IsZero() {
		w.first = now
	}
	w.lastMoved = moved
	if silent := now.Sub(moved); silent >= d.TakeOverAfter {
		if d.ended() {
			return false, true // not on behalf of a session gone
		}
		w.released = true
		h.Release(fmt.Sprintf("another session took over %s, which this one held with nothing moving for %v", rel, silent.Round(time.Second)), d.Holder)
		return true, true
	}
	if now.Sub(w.first) > d.TakeOverAfter+time.Second {
		// Its silence should have grown as long as the watch; a
		// Holder whose clock does not is not waited for again.
		return false, true
	}
	return d.pause(), true
}

// ended reports whether the Dir's session has ended (Done).
func (d *Dir) ended() bool {
	select {
	case <-d.Done:
		return true
	default:
		return false
	}
}

// pause waits busyPoll before Create tries a locked name again; false if
// the Dir's session ended meanwhile (Done): it need not wait any more.
func (d *Dir) pause() bool {
	if d.Done == nil {
		time.Sleep(busyPoll)
		return true
	}
	t := time.NewTimer(busyPoll)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.Done:
		return false
	}
}
