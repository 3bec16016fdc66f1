package filestore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// tempFile is an open temporary file being received, held as a bare
// descriptor. An *os.File would cost a receiver of small files an fcntl
// (os.NewFile asks whether the descriptor is non-blocking), a finalizer
// and a path built for its name on every file; the descriptor of a
// regular file needs none of the poller's machinery. The name is built
// only for errors.
type tempFile struct {
	fd        int
	dir, base string // directory relative to the tree's top, and the name in it
	// dev and ino identify the file, found once it is locked
	// (identify): what the temporary name must still be when the file
	// is renamed to its final name or removed.
	dev, ino uint64
	links    uint64 // its link count and owner then (foreign)
	uid      uint32
	holder   Holder // registered for it (register), or nil
	once     sync.Once
	closeErr error
	closed   bool // fd is closed (its number may be another file's now)
	// mode is the file's permission bits, if known (modeKnown): as
	// created (openUnnamed), so that chmod to them is not asked again.
	mode      uint32
	modeKnown bool
	// tooBig: a write past the largest file the file system (or
	// RLIMIT_FSIZE) allows failed.
	tooBig atomic.Bool
}

func (t *tempFile) err(op string, err error) error {
	return &fs.PathError{Op: op, Path: path.Join(t.dir, t.base), Err: err}
}

// WriteAt writes all of b at off.
func (t *tempFile) WriteAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pwrite(t.fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err == unix.EFBIG {
			// No resume can take the file past this: its partial is
			// not kept (Abort).
			t.tooBig.Store(true)
			return n, t.err("write", fmt.Errorf("%w: this file system holds no file larger than about %d bytes", err, off+int64(n)))
		}
		if err != nil {
			return n, t.err("write", err)
		}
		if m == 0 {
			return n, t.err("write", io.ErrShortWrite)
		}
		n += m
	}
	return n, nil
}

// ReadAt reads len(b) bytes at off, or fewer and io.EOF at the end.
func (t *tempFile) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pread(t.fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, t.err("read", err)
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

// size is the file's length.
func (t *tempFile) size() (int64, error) {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(t.fd, &st) }); err != nil {
		return 0, t.err("fstat", err)
	}
	return st.Size, nil
}

// firstHole returns where the first hole (a range never written) of the
// file begins, or size, its length, if it has none. A file system that
// does not track holes reports none (SEEK_HOLE gives the length), and an
// error is taken the same way: the whole file counts as data, as it did
// before holes were looked for.
func (t *tempFile) firstHole(size int64) int64 {
	if size == 0 {
		return 0
	}
	var off int64
	err := ignoringEINTR(func() error {
		var err error
		off, err = unix.Seek(t.fd, 0, unix.SEEK_HOLE)
		return err
	})
	if err != nil || off > size {
		return size
	}
	return off
}

func (t *tempFile) truncate(size int64) error {
	if err := ignoringEINTR(func() error { return ftruncate(t.fd, size) }); err != nil {
		return t.err("truncate", err)
	}
	return nil
}

// fchmod and fchmodat are unix's, or a test's that refuses modes as
// some file systems do (modeRefused); ftruncate unix's, or a test's
// that refuses a cut as a file system over its quota does.
var (
	fchmod    = unix.Fchmod
	fchmodat  = unix.Fchmodat
	ftruncate = unix.Ftruncate
)

func (t *tempFile) chmod(perm fs.FileMode) error {
	if t.modeKnown && t.mode == uint32(perm.Perm()) {
		return nil
	}
	if err := ignoringEINTR(func() error { return fchmod(t.fd, uint32(perm.Perm())) }); err != nil {
		return t.err("chmod", err)
	}
	return nil
}

// chtimes sets the file's access and modification times through its
// descriptor.
func (t *tempFile) chtimes(tm time.Time) error {
	one, err := timespec(tm)
	if err != nil {
		return t.err("utimensat", err)
	}
	ts := [2]unix.Timespec{one, one}
	if err := ignoringEINTR(func() error { return futimens(t.fd, &ts) }); err != nil {
		return t.err("utimensat", err)
	}
	return nil
}

// syncOrEmpty is sync, which on failure empties the file: a write-back
// error is reported once, and the page cache may still hold what the
// disk never got, so a resume reading the partial back would take it
// for received and the next fsync would succeed ("fsyncgate"). Empty,
// the file is received again whole.
func (t *tempFile) syncOrEmpty() error {
	if err := ignoringEINTR(func() error { return unix.Fsync(t.fd) }); err != nil {
		t.truncate(0)
		return t.err("fsync", err)
	}
	return nil
}

// identify records the file's device and inode numbers.
func (t *tempFile) identify() error {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(t.fd, &st) }); err != nil {
		return t.err("fstat", err)
	}
	t.dev, t.ino = uint64(st.Dev), uint64(st.Ino)
	t.links, t.uid = uint64(st.Nlink), st.Uid
	return nil
}

// close closes the descriptor once; later calls return the first result.
func (t *tempFile) close() error {
	t.once.Do(func() {
		// Forgotten after the close: a Create that meets the lock just
		// before it still finds the holder it is waiting for. (The entry
		// is by inode: another session's, made once the lock is free,
		// is not removed.)
		defer t.unregister()
		t.closed = true
		// close(2) is not retried on EINTR: on Linux the descriptor is
		// gone either way.
		if err := unix.Close(t.fd); err != nil {
			t.closeErr = t.err("close", err)
		}
	})
	return t.closeErr
}

// lock takes an exclusive, non-blocking flock, so that two sessions never
// write the same temporary file. It reports false if another holder has
// it. The lock ends when the descriptor is closed.
func (t *tempFile) lock() (bool, error) {
	ok, err := flockNB(t.fd)
	if err != nil {
		return false, t.err("flock", err)
	}
	return ok, nil
}

// flockNB takes an exclusive flock on fd without waiting; false: another
// holder has it.
func flockNB(fd int) (bool, error) {
	err := ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}
