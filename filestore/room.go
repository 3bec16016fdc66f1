package filestore

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// fsRoom is the free space of one file system as the receivers of this
// process see it, shared by every session and directory on it: what
// fstatfs last said, less what kerf has written there since and what it
// has promised to files admitted and not yet written. Each directory's
// own reading forgot the files other sessions had been promised, so
// concurrent uploads that together did not fit were all admitted and
// all failed with the disk full (QA: three 12 MiB files into 30 MiB;
// sent by one client, two were stored and the third refused at once).
type fsRoom struct {
	mu        sync.Mutex
	free      int64     // fstatfs's available bytes at at
	at        time.Time // zero: never read
	writtenAt int64     // written, at at
	written   atomic.Int64
	promised  atomic.Int64
}

// rooms are the fsRooms of the file systems received into, by device.
var rooms sync.Map // uint64 -> *fsRoom

// roomOf returns the fsRoom of the file system dirfd is on, nil if it
// cannot be told.
func roomOf(dirfd int) *fsRoom {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(dirfd, &st) }); err != nil {
		return nil
	}
	r, _ := rooms.LoadOrStore(uint64(st.Dev), &fsRoom{})
	return r.(*fsRoom)
}

// admit reserves n bytes for a file if the file system has room for
// them beside what is promised already, reading fstatfs (through
// statfs) at most once a second or when n is more than half of what
// seems free; it returns what seems free when it refuses, and how much
// more of the file system's free space is held for files being received
// (promised: a refusal said only the first, and df showed more free
// than it, QA ar F5). ok is true, and nothing reserved, when the free
// space cannot be read.
func (r *fsRoom) admit(n int64, statfs func(*unix.Statfs_t) error) (free, held int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	free = r.free - (r.written.Load() - r.writtenAt) - r.promised.Load()
	if r.at.IsZero() || time.Since(r.at) > time.Second || n > free/2 {
		var st unix.Statfs_t
		if err := statfs(&st); err != nil || st.Bsize <= 0 || st.Blocks == 0 {
			// Unknown: let the writes tell. (A file system of no size,
			// ramfs, has no limit but memory: QA aa, 0 free refused
			// every file.)
			return 0, 0, true
		}
		r.free, r.at, r.writtenAt = math.MaxInt64, time.Now(), r.written.Load()
		if int64(st.Bavail) <= math.MaxInt64/int64(st.Bsize) {
			r.free = int64(st.Bavail) * int64(st.Bsize)
		}
		free = r.free - r.promised.Load()
	}
	if n > free {
		return max(free, 0), max(r.promised.Load(), 0), false
	}
	r.promised.Add(n)
	return free, 0, true
}
