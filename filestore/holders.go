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
	// Silent is how long the holder has moved no data and heard nothing
	// from its peer (0 while it works, or reads a file for a check).
	Silent() time.Duration
	// Release ends the holder's work, so that its files are let go
	// (kept, for a resume); why says who took them and why.
	Release(why string)
}

// fileID names a file by device and inode: what a locked partial is,
// whatever it is called.
type fileID struct{ dev, ino uint64 }

// holders maps partial files locked in this process to their Dir's
// Holder (Dirs without one register nothing).
var holders sync.Map // fileID -> Holder

// Waits for a locked partial's holder (see waitForHolder).
const (
	// stalledAfter: a holder silent this long may be a dead session, so
	// a Create waits (up to TakeOverAfter) to see; one that is working
	// makes Create give up at once, as before.
	stalledAfter = busyGrace
	stalePoll    = 100 * time.Millisecond
	// releaseWait bounds the wait for a released holder to let go: a
	// server's session closes its connection 2 s after it is cancelled
	// (time to send an E packet), then ends its files.
	releaseWait = 5 * time.Second
)

// register notes that f, locked and identified, is held for d's Holder.
func (d *Dir) register(f *tempFile) {
	if d.Holder == nil {
		return
	}
	f.holder = d.Holder
	holders.Store(fileID{f.dev, f.ino}, d.Holder)
}

// unregister forgets f's holder; called before its descriptor (and so
// its lock) is closed.
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
// another session (holder, if of this process; see holderOf): wait (it has slept, and Create tries
// again) or give up (false: ErrBusy). Any holder is waited for briefly
// (busyGrace over the Dir's life: a killed client's session the server
// is about to see end). Then a holder of this process that has been
// silent for stalledAfter is watched until it has been silent for
// TakeOverAfter, released, and waited for (releaseWait) to let go; a
// working one is not (two live sessions sending one name: the second
// is refused, as before).
func (d *Dir) waitForHolder(h Holder, rel string) bool {
	if d.busyWaited < busyGrace {
		time.Sleep(busyPoll)
		d.busyWaited += busyPoll
		return true
	}
	if d.TakeOverAfter <= 0 {
		return false
	}
	if h == nil || h == d.Holder {
		return false
	}
	if d.released[h] {
		if d.releaseWaited >= releaseWait {
			return false
		}
		time.Sleep(busyPoll)
		d.releaseWaited += busyPoll
		return true
	}
	switch silent := h.Silent(); {
	case silent >= d.TakeOverAfter:
		if d.released == nil {
			d.released = map[Holder]bool{}
		}
		d.released[h] = true
		h.Release(fmt.Sprintf("another session resumed %s, which this one held with nothing moving for %v", rel, silent.Round(time.Second)))
		return true
	case silent >= stalledAfter && d.staleWaited < d.TakeOverAfter:
		time.Sleep(stalePoll)
		d.staleWaited += stalePoll
		return true
	}
	return false
}
