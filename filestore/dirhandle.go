// dirHandle: the tree's directories held open, and the single-name
// operations done through them.

package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// maxDirHandles bounds the directories a Dir keeps open when no file in
// them is being received: 64, or under a low descriptor limit a
// sixteenth of it (two descriptors a directory), at least 2, so that a
// tree of many directories leaves room for the files (QA: under a limit
// of 64 every file of a 60-directory tree failed "too many open files").
var maxDirHandles = sync.OnceValue(func() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return 64
	}
	return int(min(64, max(2, lim.Cur/16)))
})

// dirHandle is an open directory of the tree: a Root confined to it for
// operations on single names, and the directory itself for fsync.
type dirHandle struct {
	rel  string // relative to the tree's top, "." for the top
	root *os.Root
	f    *os.File // opened on first sync
	refs int      // incoming files using it
	gone bool     // dropped from the cache; closed when refs reaches 0

	// room is the free space of the file system the directory is on,
	// shared with every other directory there (fsRoom), found once.
	roomOnce sync.Once
	room     *fsRoom

	// The directory's entries as read once (list), with what this Dir
	// has put there since (note): where neither a file's name nor its
	// partial's is among them, the file may be received unnamed
	// (unnamed.go).
	lmu       sync.Mutex
	listing   map[uint64]struct{} // names' hashes (nameHash)
	listState int8                // listNotYet, listDone or listUnknown
	noTmpfile atomic.Bool         // its file system refused O_TMPFILE
	// createdMode is the mode an unnamed file is given when created
	// here, with modeSeen set once known (openUnnamed).
	createdMode atomic.Uint32
	// onFUSE: the directory is on a FUSE file system (retime).
	fuseOnce sync.Once
	onFUSE   bool
}

// Open opens (creating if needed) the directory at dir.
func Open(dir string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	return OpenExisting(dir)
}

// OpenExisting opens the directory at dir, which must exist: a served
// root that is missing (a typing error, a file system not mounted) is
// an error, not a new directory on whatever lies beneath.
func OpenExisting(dir string) (*Dir, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	return &Dir{root: r, cwd: "."}, nil
}

// Close releases the directory; files committed in an unfinished batch
// are made durable and renamed first.
func (d *Dir) Close() error {
	d.flushBatch()
	d.mu.Lock()
	for _, h := range d.dirs {
		d.evictLocked(h)
	}
	d.mu.Unlock()
	return d.root.Close()
}

// openDir returns the handle of directory rel (creating the directory if
// need be and create), from the cache if it is there, with a reference
// for the caller to give back with putDir.
func (d *Dir) openDir(rel string, create bool) (*dirHandle, error) {
	d.mu.Lock()
	if h := d.dirs[rel]; h != nil {
		h.refs++
		d.mu.Unlock()
		return h, nil
	}
	d.mu.Unlock()
	if create && rel != "." {
		if err := d.root.MkdirAll(rel, 0o755); err != nil {
			return nil, fmt.Errorf("filestore: %w", d.inTheWay(rel, err))
		}
		d.noteMade(rel) // in its parents' listings (unnamed.go)
		d.madeDirs(rel)
	}
	r, err := d.root.OpenRoot(rel)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	h := &dirHandle{rel: rel, root: r, refs: 1}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dirs == nil {
		d.dirs = make(map[string]*dirHandle)
	}
	if old := d.dirs[rel]; old != nil { // opened meanwhile
		old.refs++
		r.Close()
		return old, nil
	}
	if len(d.dirs) >= maxDirHandles() {
		for _, o := range d.dirs {
			if o.refs == 0 {
				d.evictLocked(o)
			}
		}
	}
	d.dirs[rel] = h
	return h, nil
}

// putDir gives back a reference taken by openDir.
func (d *Dir) putDir(h *dirHandle) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h.refs--
	if h.refs == 0 && h.gone {
		h.close()
	}
}

// dropDir forgets a cached handle that no longer works (its directory
// was removed, say); holders keep theirs until putDir.
func (d *Dir) dropDir(h *dirHandle) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dirs[h.rel] == h {
		d.evictLocked(h)
	}
}

// evictLocked takes h out of the cache; it is closed now if nobody holds
// it, else by the last putDir. The caller holds d.mu.
func (d *Dir) evictLocked(h *dirHandle) {
	delete(d.dirs, h.rel)
	h.gone = true
	if h.refs == 0 {
		h.close()
	}
}

func (h *dirHandle) close() {
	h.root.Close()
	if h.f != nil {
		h.f.Close()
	}
}

// dir returns the directory opened as a file (for fsync and openat).
func (h *dirHandle) dir(d *Dir) (*os.File, error) {
	d.mu.Lock()
	f := h.f
	d.mu.Unlock()
	if f != nil {
		return f, nil
	}
	f, err := h.root.Open(".")
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if h.f == nil {
		h.f = f
	} else {
		f.Close()
	}
	return h.f, nil
}

// sync makes the directory's entries (a rename into it) durable.
func (h *dirHandle) sync(d *Dir) error {
	f, err := h.dir(d)
	if err != nil {
		return err
	}
	return f.Sync()
}

// atDir runs f with the directory's descriptor. Names given to the *at
// calls inside are single path elements, so they stay in the directory;
// os.Root's own methods would check each name for symlinks again, at a
// few syscalls per call.
func (h *dirHandle) atDir(d *Dir, f func(dirfd int) error) error {
	df, err := h.dir(d)
	if err != nil {
		return err
	}
	rc, err := df.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func plainName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("filestore: %q is not a plain name", name)
	}
	return nil
}

// regularOrAbsent reports whether name (one path element, not followed
// if a symlink) is a regular file or does not exist, and if not, what it
// is (EntryKind). It asks fstatat on
// the directory's descriptor: os.Root's Lstat walks the name afresh at
// several syscalls, a tenth of the cost of receiving a small file.
func (h *dirHandle) regularOrAbsent(d *Dir, name string) (kind string, ok bool) {
	if plainName(name) != nil {
		return "not a plain name", false
	}
	st, err := h.lstat(d, name)
	if err != nil || st.Mode&unix.S_IFMT == unix.S_IFREG {
		return "", true
	}
	return EntryKind(statInfo{st: st}.Mode()), false
}

// lstat is fstatat of name (one plain element, not followed if a
// symlink) in this directory.
func (h *dirHandle) lstat(d *Dir, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := h.atDir(d, func(dirfd int) error {
		return ignoringEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	})
	return st, err
}

// chtimes sets the access and modification times of name (not following
// a symlink).
func (h *dirHandle) chtimes(d *Dir, name string, t time.Time) error {
	if err := plainName(name); err != nil {
		return err
	}
	ts, err := timespec(t)
	if err != nil {
		return &fs.PathError{Op: "utimensat", Path: path.Join(h.rel, name), Err: err}
	}
	return h.atDir(d, func(dirfd int) error {
		if err := unix.UtimesNanoAt(dirfd, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &fs.PathError{Op: "utimensat", Path: path.Join(h.rel, name), Err: err}
		}
		return nil
	})
}

// splitRel splits rel, a path in the tree, into its directory ("." at
// the top) and its last element, what a directory handle takes.
func splitRel(rel string) (dir, base string) {
	dir, base = path.Split(rel)
	if dir = strings.TrimSuffix(dir, "/"); dir == "" {
		dir = "."
	}
	return dir, base
}

// timespec is t for utimensat, to the nanosecond, for any year a
// timespec holds (t.UnixNano overflows after 2262 and before 1678); on
// 32-bit Linux a time outside 1901-2038 is ERANGE.
func timespec(t time.Time) (unix.Timespec, error) {
	return unix.TimeToTimespec(t)
}

// rename renames from to to, both in this directory.
func (h *dirHandle) rename(d *Dir, from, to string) error {
	if err := plainName(from); err != nil {
		return err
	}
	if err := plainName(to); err != nil {
		return err
	}
	return h.atDir(d, func(dirfd int) error {
		if err := unix.Renameat(dirfd, from, dirfd, to); err != nil {
			return &os.LinkError{Op: "renameat", Old: path.Join(h.rel, from), New: path.Join(h.rel, to), Err: err}
		}
		return nil
	})
}

// stalePartialError is a partial file Create may not open: one left by
// an earlier transfer that ran as another user, most likely. It is
// fs.ErrPermission.
type stalePartialError struct{ name string }

func (e *stalePartialError) Error() string {
	return "filestore: " + e.name + ": another user's stale partial? (permission denied) its owner must remove it"
}

func (e *stalePartialError) Unwrap() error { return fs.ErrPermission }

// exists reports whether name is an entry of this directory.
func (h *dirHandle) exists(d *Dir, name string) bool {
	_, err := h.lstat(d, name)
	return err == nil
}

// openTemp opens the temporary file name (one path element) in the
// directory, creating it if needed; fresh reports that it was created
// now and so is empty. It calls openat on the directory itself rather
// than os.Root.OpenFile, which for one plain name costs five more
// syscalls per file (symlink checks, poller registration that fails for
// regular files); O_NOFOLLOW keeps a symlink planted under the
// temporary name from being followed, so confinement holds.
func (h *dirHandle) openTemp(d *Dir, name string) (f *tempFile, fresh bool, err error) {
	if err := plainName(name); err != nil {
		return nil, false, err
	}
	const flags = unix.O_RDWR | unix.O_CREAT | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd := -1
	err = h.atDir(d, func(dirfd int) error {
		var err error
		fd, err = unix.Openat(dirfd, name, flags|unix.O_EXCL, 0o600)
		fresh = err == nil
		if err == unix.EEXIST {
			// O_NONBLOCK: what is there may be a named pipe, refused
			// below (O_RDWR does not block on one, but let nothing
			// else that might).
			fd, err = unix.Openat(dirfd, name, flags|unix.O_NONBLOCK, 0o600)
			if err == nil {
				if rerr := mustBeRegular(fd); rerr != nil {
					unix.Close(fd)
					var nr errNotRegular
					if errors.As(rerr, &nr) {
						return fmt.Errorf("filestore: %s is %s where kerf keeps the file's partial; remove it to receive the file", path.Join(h.rel, name), nr.kind)
					}
					return &fs.PathError{Op: "fstat", Path: path.Join(h.rel, name), Err: rerr}
				}
			}
		}
		if err == unix.ELOOP {
			// A link where the partial goes, never followed: the
			// system's words ("too many levels of symbolic links") would
			// not say what to do.
			return fmt.Errorf("filestore: %s is a symbolic link where kerf keeps the file's partial; remove it to receive the file", path.Join(h.rel, name))
		}
		if err == unix.EISDIR {
			// The same for a directory (QA: "openat pf: is a
			// directory", of a pf that was not one).
			return fmt.Errorf("filestore: %s is a directory where kerf keeps the file's partial; remove it to receive the file", path.Join(h.rel, name))
		}
		if err != nil {
			return &fs.PathError{Op: "openat", Path: path.Join(h.rel, name), Err: err}
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return &tempFile{fd: fd, dir: h.rel, base: name}, fresh, nil
}

// foreign reports whether the partial f, locked and identified, is not
// one this side made: it has other names (a hard link), or its owner is
// neither this process's user nor the directory's. (A server running as
// root on NFS with root_squash makes files owned by nobody, as its
// directories are: those are its own.)
func (h *dirHandle) foreign(d *Dir, f *tempFile) bool {
	if f.links != 1 {
		return true
	}
	if f.uid == uint32(os.Geteuid()) {
		return false
	}
	owner := ^uint32(0)
	h.atDir(d, func(dirfd int) error {
		var st unix.Stat_t
		if err := unix.Fstat(dirfd, &st); err == nil {
			owner = st.Uid
		}
		return nil
	})
	return f.uid != owner
}

// unlink removes the entry name of this directory.
func (h *dirHandle) unlink(d *Dir, name string) error {
	return h.atDir(d, func(dirfd int) error {
		if err := unix.Unlinkat(dirfd, name, 0); err != nil {
			return &fs.PathError{Op: "unlinkat", Path: path.Join(h.rel, name), Err: err}
		}
		return nil
	})
}

// stillNamed records which file f, locked, is, and reports whether it
// is still the file called name here: another session may have renamed
// or removed it between the open and the lock.
func (h *dirHandle) stillNamed(d *Dir, name string, f *tempFile) bool {
	return f.identify() == nil && h.isOurs(d, name, f)
}

// errNotOurs is why a received file is not renamed to its final name:
// its temporary name no longer names the file written (removed, or
// replaced, by something other than kerf), and what is there now
// was not received nor checked.
var errNotOurs = errors.New("its partial was removed or replaced by something else while it was received; not stored")

// isOurs reports whether name in this directory is still the file f
// (its temporary name, which only kerf should touch). It costs an
// fstatat, and is what keeps a rename or a removal by name from acting
// on a file kerf did not write.
func (h *dirHandle) isOurs(d *Dir, name string, f *tempFile) bool {
	st, err := h.lstat(d, name)
	return err == nil && uint64(st.Dev) == f.dev && uint64(st.Ino) == f.ino
}

// renameOurs renames the temporary file f, named from, to to, unless
// from names another file by now (errNotOurs).
func (h *dirHandle) renameOurs(d *Dir, from, to string, f *tempFile) error {
	if !h.isOurs(d, from, f) {
		return errNotOurs
	}
	err := h.rename(d, from, to)
	if errors.Is(err, unix.EISDIR) {
		// A directory holds the final name (two paths of one transfer
		// met as a file and a directory, or one was made meanwhile): no
		// later try can store the file there, so its copy would stay
		// under kerf's temporary name for nothing; the sender still
		// has it. Checked as ours just above, and still held open.
		h.root.Remove(from)
	}
	return err
}

// openRead opens name in this directory for reading, as openTemp opens
// for writing: one openat on the directory, O_NOFOLLOW, no poller.
func (h *dirHandle) openRead(d *Dir, name string) (*os.File, error) {
	if err := plainName(name); err != nil {
		return nil, err
	}
	fd := -1
	err := h.atDir(d, func(dirfd int) error {
		return ignoringEINTR(func() error {
			var err error
			// O_NONBLOCK: a named pipe put in the file's place would
			// block the open for ever (it is then refused below).
			fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
			return err
		})
	})
	if err == nil {
		if err = mustBeRegular(fd); err == nil {
			// Back to blocking, so that os.NewFile does not try the
			// poller with it.
			_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, unix.O_RDONLY)
		}
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: path.Join(h.rel, name), Err: err}
	}
	return os.NewFile(uintptr(fd), path.Join(d.root.Name(), h.rel, name)), nil
}

// fuse reports whether the directory is on a FUSE file system, asked of
// fstatfs once.
func (h *dirHandle) fuse(d *Dir) bool {
	h.fuseOnce.Do(func() {
		h.atDir(d, func(dirfd int) error {
			h.onFUSE = fuseDir(dirfd)
			return nil
		})
	})
	return h.onFUSE
}

// fsRoom returns the free space of h's file system (roomOf), nil if it
// cannot be told.
func (h *dirHandle) fsRoom(d *Dir) *fsRoom {
	h.roomOnce.Do(func() {
		h.atDir(d, func(dirfd int) error {
			h.room = roomOf(dirfd)
			return nil
		})
	})
	return h.room
}
