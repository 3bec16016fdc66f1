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
		st.Bsize, st.Bavail, st.Blocks = 1, avail, 1<<40
		return nil
	}
	var r fsRoom
	admit := func(n int64, want bool) {
		t.Helper()
		free, held, ok := r.admit(n, statfs)
		if ok != want {
			t.Fatalf("admit(%d) = %d, %v; want %v (promised %d, written %d)", n, free, ok, want, r.promised.Load(), r.written.Load())
		}
		if !ok && held != r.promised.Load() {
			t.Fatalf("admit(%d) refused, saying %d held; %d are promised", n, held, r.promised.Load())
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

// A file admitted without a promise (its size unknown, no attributes
// at all, or a text file, whose size changes on the way) still has its
// writes counted against its file system's room, so that files admitted
// beside it are not promised the space it took (review: such writes
// went uncounted until the next fstatfs).
func TestWritesCountedWithoutPromise(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, c := range []struct {
		name string
		size int64 // told by WillHold, and asked of Room when known; -2: neither
	}{{"unknown", -1}, {"untold", -2}, {"known", 1 << 20}} {
		in, err := d.Create(c.name)
		if err != nil {
			t.Fatal(err)
		}
		inc := in.(*incoming)
		if c.size >= -1 {
			if err := inc.WillHold(c.size, false); err != nil {
				t.Fatal(err)
			}
		}
		if c.size >= 0 {
			if err := inc.Room(c.size); err != nil {
				t.Fatal(err)
			}
		}
		r := inc.h.fsRoom(d)
		if r == nil {
			t.Fatal("no room for the test's file system")
		}
		before := r.written.Load()
		if _, err := inc.WriteAt(make([]byte, 5000), 0); err != nil {
			t.Fatal(err)
		}
		if got := r.written.Load() - before; got != 5000 {
			t.Errorf("%s size: 5000 bytes written counted as %d", c.name, got)
		}
		inc.Abort(false)
	}
}

// A file system of no size (ramfs: f_blocks 0, no limit but memory) is
// taken as unknown, not full (QA aa: every file was refused).
func TestFSRoomOfNoSizeIsUnknown(t *testing.T) {
	var r fsRoom
	statfs := func(st *unix.Statfs_t) error {
		st.Bsize, st.Bavail, st.Blocks = 4096, 0, 0
		return nil
	}
	if _, _, ok := r.admit(1<<30, statfs); !ok {
		t.Error("a file refused on a file system that says it has no size")
	}
}
