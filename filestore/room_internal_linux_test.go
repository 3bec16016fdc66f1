package filestore

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The room a file system has is what fstatfs said, less what was
// written since and what is promised and not written: a byte written
// against a promise is counted once, and a fresh reading (which has the
// written bytes in it) keeps the promises.
func TestFSRoomCountsOnce(t *testing.T) {
	avail := uint64(100)
	statfs := func(st *unix.Statfs_t) error {
		st.Bsize, st.Bavail = 1, avail
		return nil
	}
	var r fsRoom
	admit := func(n int64, want bool) {
		t.Helper()
		if free, ok := r.admit(n, statfs); ok != want {
			t.Fatalf("admit(%d) = %d, %v; want %v (promised %d, written %d)", n, free, ok, want, r.promised.Load(), r.written.Load())
		}
	}
	admit(60, true)
	admit(50, false) // 40 left
	// 30 of the 60 written (as incoming.wrote counts them), and on the
	// disk.
	r.written.Add(30)
	r.promised.Add(-30)
	avail = 70
	admit(41, false)
	admit(40, true)
	// A fresh reading: the disk has the 30 written; 30+40 are promised.
	r.at = time.Time{}
	admit(1, false)
	r.promised.Add(-40) // the second given up
	r.at = time.Time{}
	admit(40, true)
	admit(1, false)
}
