// Package filestore is the file side of kerf shared by every mode: it
// receives files under temporary names and renames them only when they
// are complete and durable, keeps partial files for recovery, and serves
// a directory tree to a Kermit server, all confined with os.Root so that
// no name a peer sends can reach outside the tree.
package filestore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"kerf/framing"
	"kerf/kermit"
)

// ErrUnsafeName is returned for names that are absolute, climb out with
// "..", or contain control characters.
var ErrUnsafeName = errors.New("filestore: unsafe file name")

// A name another session holds is tried again every busyPoll, for at
// most busyGrace over a Dir's life (a session's), before Create says
// ErrBusy: enough for a server to see the end of a killed client's
// session (QA: up to 0.3 s) when the client is run again at once, and
// bounded, so that two live sessions sending the same names do not wait
// on each other file after file.
const (
	busyGrace = 2 * time.Second
	busyPoll  = 25 * time.Millisecond
)

// ErrBusy is returned by Create for a name another session is receiving.
var ErrBusy = errors.New("filestore: file is being received by another transfer (it is free once that one ends: on a server, when its client stops or the server drops it as idle)")

// busy is ErrBusy for rel, saying when a take-over would come where
// this Dir takes over (a server session's; see Holder).
func (d *Dir) busy(rel string) error {
	if d.TakeOverAfter > 0 && d.Holder != nil {
		return fmt.Errorf("%w; or taken over by a transfer of it once that one has moved nothing for %v: %s", ErrBusy, d.TakeOverAfter, rel)
	}
	return fmt.Errorf("%w: %s", ErrBusy, rel)
}

// PartSuffix marks a file still being received.
const PartSuffix = ".kerf-part"

// nameMax is the longest name (one path element) Linux file systems take.
const nameMax = 255

// TempName is the name a file named base is received under, in its
// directory: ".base.kerf-part", or, where that would exceed nameMax, a
// prefix of base (cut at a UTF-8 rune boundary) and a hash of all of
// it. It depends on base alone, so a later transfer finds the partial
// again, and a resumed send's quick check sees it in a listing.
// Everything that makes or looks for a temporary name goes through here
// (and isPartName).
func TempName(base string) string {
	if 1+len(base)+len(PartSuffix) <= nameMax {
		return "." + base + PartSuffix
	}
	sum := sha256.Sum256([]byte(base))
	tag := "~" + hex.EncodeToString(sum[:8])
	n := nameMax - 1 - len(tag) - len(PartSuffix)
	for i := 0; i < utf8.UTFMax-1 && !utf8.RuneStart(base[n]); i++ {
		n--
	}
	return "." + base[:n] + tag + PartSuffix
}

// isPartName reports whether name, one path element, is a temporary
// file's (see TempName): such names are never served, listed, or
// accepted from a peer. One that only ends in PartSuffix ("x.kerf-part")
// is an ordinary file's.
// IsPartName reports whether name (one element) has the form of kerf's
// own partial files, .NAME.kerf-part: such files are neither sent nor
// served.
func IsPartName(name string) bool {
	return len(name) > 1+len(PartSuffix) && name[0] == '.' && strings.HasSuffix(name, PartSuffix)
}

// Dir is a directory tree files are received into and served from.
type Dir struct {
	root *os.Root
	// madeIn are the directories in which this Dir made (or may have
	// made) a directory since its last flush: synced by the flush too,
	// so that a saved file's new parents are durable with it (QA: only
	// a file's own directory was synced). Under mu.
	madeIn map[string]bool
	cwd    string // relative to root, "." at the top
	// busyWaited is how long Create has waited, in all, for names that
	// another session held (see busyGrace).
	busyWaited time.Duration
	// Holder, if set, is who this Dir's partial files are held for (a
	// server's session); with TakeOverAfter > 0, a Create that finds a
	// partial locked by a Holder of this process silent that long takes
	// it over (see Holder). watches are the holders waited for.
	Holder        Holder
	TakeOverAfter time.Duration
	// Done, if set, is closed when the Dir's session ends: a Create
	// waiting for another session's partial gives up then (ErrBusy).
	Done     <-chan struct{}
	watches  map[Holder]*holderWatch
	ReadOnly bool
	// Flat keeps only the last element of incoming names, for peers that
	// send bare names and for receivers that asked for no tree.
	Flat bool
	// Expect, if set, is asked of each name a peer sends, a file's (as
	// it would be stored: cut to its last element when Flat) or a
	// directory's, before anything is made for it; its error refuses
	// the name. A client sets it to what it asked for: a server could
	// otherwise store any name under the destination (.bashrc, .ssh/…),
	// the hole of scp's CVE-2019-6111.
	Expect func(name string) error
	// UniqueNames refuses to receive a file under a name a file was
	// already committed under through this Dir: a get of several
	// filespecs whose files share a name (a/x and b/x without -r) would
	// otherwise keep only the last, silently.
	UniqueNames bool
	// Names, if set, holds the final names committed with UniqueNames,
	// shared by the Dirs of one transfer's sessions; nil: the Dir's own.
	Names *NameSet
	// Sparse leaves holes where a received file has runs of zero bytes
	// (whole writes of at least sparseMin bytes), as cp --sparse=always
	// and rsync --sparse do: disk images and the like then take only the
	// space of their data. Off by default, since a file whose zeros were
	// allocated on purpose (to reserve the space) would lose that.
	Sparse bool
	// UnnamedMax is the largest file, by its announced size, received
	// as an unnamed file linked into place once complete (unnamed.go):
	// cheaper than a temporary name, but a crash of this process keeps
	// nothing of it. 0: never (a slow line, where a partial is worth
	// keeping and a system call costs nothing beside the line).
	UnnamedMax int64
	// listedNames is how many names the directory listings hold, bounded
	// by listBudget (unnamed.go).
	listedNames atomic.Int64

	// Directories files are being received into, kept open so that each
	// file costs one-name operations (openat, renameat, fsync of the
	// directory) rather than a walk of its whole path per operation.
	mu   sync.Mutex
	dirs map[string]*dirHandle

	// Between BeginBatch and EndBatch, committed files wait here for one
	// flush that syncs them all (see BeginBatch). Used by the goroutine
	// that receives, like Create and Commit.
	batching bool
	pending  []*incoming
	pendingN map[string]bool // dir + "/" + tmp of pending files
	flushing *flush          // a full batch being flushed in the background
	flushErr error           // a finished background flush's first error, for EndBatch
}

// flush is a batch handed to a background goroutine.
type flush struct {
	names map[string]bool // as pendingN
	done  chan struct{}
	err   error // set before done is closed
}

// maxDirHandles bounds the directories a Dir keeps open when no file in
// them is being received.
const maxDirHandles = 64

// dirHandle is an open directory of the tree: a Root confined to it for
// operations on single names, and the directory itself for fsync.
type dirHandle struct {
	rel  string // relative to the tree's top, "." for the top
	root *os.Root
	f    *os.File // opened on first sync
	refs int      // incoming files using it
	gone bool     // dropped from the cache; closed when refs reaches 0

	// room is the free space Room last read here (fstatfs), less what
	// the files it admitted since will take: a run of small files costs
	// one fstatfs a second, not one each.
	room struct {
		sync.Mutex
		free int64
		at   time.Time // zero: never read
	}

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
			return nil, d.inTheWay(rel, err)
		}
		d.noteMade(rel) // in its parents' listings (unnamed.go)
		d.madeDirs(rel)
	}
	r, err := d.root.OpenRoot(rel)
	if err != nil {
		return nil, err
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
	if len(d.dirs) >= maxDirHandles {
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

// Space returns the bytes free for an unprivileged user on the tree's
// file system (REMOTE SPACE).
func (d *Dir) Space() (int64, error) {
	var st unix.Statfs_t
	if err := ignoringEINTR(func() error { return unix.Statfs(d.root.Name(), &st) }); err != nil {
		return 0, fmt.Errorf("filestore: free space: %w", err)
	}
	if st.Bsize <= 0 || int64(st.Bavail) > math.MaxInt64/int64(st.Bsize) {
		return math.MaxInt64, nil
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Path returns the host path of the tree's top.
func (d *Dir) Path() string { return d.root.Name() }

// CleanName checks a name a peer sent and returns it in clean,
// '/'-separated, relative form.
func CleanName(name string) (string, error) { return cleanName(name, false) }

// cleanName is CleanName; with partsOK a name with elements of the form
// of kerf's partials is taken too (only to remove it: see resolveToRemove).
func cleanName(name string, partsOK bool) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty", ErrUnsafeName)
	}
	for _, r := range name {
		if framing.IsControl(r) || r == '\\' {
			return "", fmt.Errorf("%w: %q contains a control character or backslash", ErrUnsafeName, name)
		}
	}
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("%w: %q is absolute", ErrUnsafeName, name)
	}
	for el := range strings.SplitSeq(name, "/") {
		if el == ".." {
			if climbsOut(name) {
				return "", fmt.Errorf("%w: %q leaves the tree", ErrUnsafeName, name)
			}
			// Never taken, even where it would stay inside: what
			// "a/.." is depends on what a is (a link?), and a name
			// means what it says.
			return "", fmt.Errorf("%w: %q has a \"..\" in it: give the path without it", ErrUnsafeName, name)
		}
	}
	c := path.Clean(name)
	if c == "." {
		return "", fmt.Errorf("%w: %q", ErrUnsafeName, name)
	}
	for el := range strings.SplitSeq(c, "/") {
		// A directory so named too: its files would be stored where
		// a partial's name is, and a server's walk passes it over.
		if IsPartName(el) && !partsOK {
			return "", fmt.Errorf("%w: %q is the name of kerf's own partial file (of a transfer not finished), neither served nor stored under that name", ErrUnsafeName, name)
		}
	}
	return c, nil
}

// resolveDir resolves the argument of a change of directory: as resolve,
// but ".." steps up from the current directory (lexically, as a shell's
// cd does) as long as it stays inside the tree, and an empty argument
// is the top of the tree (C-Kermit's REMOTE CD with no argument). The
// directory is then used through os.Root, which no symlink can leave.
func (d *Dir) resolveDir(dir string) (string, error) {
	if dir == "" {
		return ".", nil
	}
	joined := dir
	if !strings.HasPrefix(dir, "/") {
		joined = d.cwd + "/" + dir
	}
	c := path.Clean("/" + joined) // a rooted Clean cannot climb above "/"
	if climbsOut(joined) {
		return "", fmt.Errorf("%w: %q leaves the tree", ErrUnsafeName, dir)
	}
	if c == "/" {
		return ".", nil
	}
	return CleanName(strings.TrimPrefix(c, "/"))
}

// climbsOut reports whether the '/'-separated path p, taken from the top
// of the tree, goes above it at some point.
func climbsOut(p string) bool {
	depth := 0
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

func (d *Dir) resolve(name string) (string, error) { return d.resolveAs(name, false) }

// resolveToRemove is resolve taking names through a directory named as
// kerf's partials, or of one, which nothing stores or serves any more
// (CleanName) but which an older kerf may have stored, and its owner may
// want gone (REMOTE DELETE, RMDIR).
func (d *Dir) resolveToRemove(name string) (string, error) { return d.resolveAs(name, true) }

func (d *Dir) resolveAs(name string, partsOK bool) (string, error) {
	if name == "" || name == "." {
		return d.cwd, nil
	}
	if strings.HasPrefix(name, "/") {
		// Absolute names are taken relative to the top of the tree.
		name = strings.TrimLeft(name, "/")
		if name == "" {
			return ".", nil
		}
		c, err := cleanName(name, partsOK)
		return c, err
	}
	c, err := cleanName(name, partsOK)
	if err != nil {
		return "", err
	}
	return path.Join(d.cwd, c), nil
}

// ErrLeadsOutside is a path refused because it would leave the tree:
// through a symbolic link leading out, or "..". (os.Root's own words,
// "mkdirat x: statat x: path escapes from parent", said it once for
// every file under such a link.)
var ErrLeadsOutside = errors.New("refused: the path leads outside the directory (through a symbolic link or ..)")

// LeadsOutside reports whether err refuses a path for leaving the tree:
// ErrLeadsOutside, or os.Root's own refusal (which has no sentinel), as
// the methods that do not reword it return it.
func LeadsOutside(err error) bool {
	return err != nil && (errors.Is(err, ErrLeadsOutside) || strings.Contains(err.Error(), "path escapes from parent"))
}

// leadsOutside rewords os.Root's refusal of a path leaving the tree.
func leadsOutside(err error, name string) error {
	if LeadsOutside(err) && !errors.Is(err, ErrLeadsOutside) {
		return fmt.Errorf("filestore: %s: %w", name, ErrLeadsOutside)
	}
	return err
}

// Create begins receiving a file.
func (d *Dir) Create(name string) (kermit.Incoming, error) {
	in, err := d.create(name)
	return in, leadsOutside(err, name)
}

func (d *Dir) create(name string) (kermit.Incoming, error) {
	if d.ReadOnly {
		return nil, fmt.Errorf("filestore: %s: read-only access", name)
	}
	if strings.HasSuffix(name, "/") {
		// A directory's name (only a kerf peer sends directories, and not
		// through Create): made into a file "dir" it would surprise.
		return nil, fmt.Errorf("filestore: %s: a file name cannot end in /", name)
	}
	if d.Flat {
		name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	}
	if err := d.expected(name); err != nil {
		return nil, err
	}
	rel, err := d.resolve(name)
	if err != nil {
		return nil, err
	}
	dir, base := splitRel(rel)
	if len(base) > nameMax {
		// The temporary name fits (TempName shortens it), the final one
		// never would: refused now, not after all the data came.
		return nil, fmt.Errorf("filestore: %s: %w (%d bytes; a name has at most %d)", rel, unix.ENAMETOOLONG, len(base), nameMax)
	}
	if d.names().has(rel) {
		return nil, fmt.Errorf("filestore: %s: a file of that name was already received in this transfer; not replaced", rel)
	}
	if err := d.fileInTheWay(dir); err != nil {
		return nil, err
	}
	tmp := TempName(base)
	if key := dir + "/" + tmp; d.pendingN[key] || d.flushing != nil && d.flushing.names[key] {
		// The same name again in one batch: the earlier file must get
		// its final name before this one takes the temporary name. A
		// failure there is another file's, for EndBatch to report.
		d.flushPending()
	}
	if d.UnnamedMax > 0 {
		// Where the directory, as listed, holds neither the name nor a
		// partial of it, the file is received unnamed (unnamed.go),
		// unless its size, once known (WillHold), says otherwise.
		if in, err := d.createUnnamed(rel, dir, base, tmp); err != nil {
			return nil, err
		} else if in != nil {
			return in, nil
		}
	}
	h, f, fresh, err := d.openTempFile(rel, dir, base, tmp)
	if err != nil {
		return nil, err
	}
	in := &incoming{d: d, h: h, final: rel, dir: dir, base: base, tmp: tmp, f: f, sparse: d.Sparse}
	if err := d.beginName(rel); err != nil {
		in.prepared = fresh
		in.empty.Store(fresh)
		in.Abort(true) // a partial kept from before stays
		return nil, err
	}
	in.prepare(fresh)
	return in, nil
}

// beginName notes rel as a file under way in the transfer's names: no
// directory of this name from now on, and none made meanwhile (by
// another session of the transfer: checked and noted at once).
func (d *Dir) beginName(rel string) error {
	return d.names().begin(rel, func() bool {
		fi, err := d.root.Lstat(rel)
		return err == nil && fi.IsDir()
	})
}

// prepare sets what the opened temporary file is: new (fresh), or a
// partial kept from before.
func (in *incoming) prepare(fresh bool) {
	in.prepared = fresh
	in.empty.Store(fresh)
	if !fresh {
		// The record covers the file as it was kept; whatever this
		// session does to it, it is not on the file any more.
		in.recorded, in.hasRecorded = in.f.takePrefix()
		// A leftover partial may hold data anywhere until it is
		// truncated: no write into it may be skipped before then.
		in.zeroFrom.Store(math.MaxInt64)
	}
}

// openTempFile opens (creating it if need be) the temporary file tmp of the
// file rel, named base in the directory dir, and locks it: the
// directory handle it returns is held for the file.
func (d *Dir) openTempFile(rel, dir, base, tmp string) (h *dirHandle, f *tempFile, fresh bool, err error) {
	var reopened bool
	for renamed := 0; ; {
		if h, err = d.openDir(dir, true); err != nil {
			return nil, nil, false, fmt.Errorf("filestore: %w", err)
		}
		if kind, ok := h.regularOrAbsent(d, base); !ok {
			d.putDir(h)
			// Not replaced (a link is not written through, as cp would:
			// the rename would put a file in its place).
			return nil, nil, false, fmt.Errorf("filestore: %s exists and is not a regular file (%s)", rel, kind)
		}
		// A new temporary file is known to be empty, so the engine's
		// Truncate(0) costs nothing; a leftover partial is opened as it
		// is (for recovery, or to be truncated).
		f, fresh, err = h.openTemp(d, tmp)
		if err == nil {
			// Two sessions receiving the same name would write one
			// temporary file: the second is refused while the first
			// holds it (until its Commit or Abort).
			if ok, lerr := f.lock(); !ok {
				var holder Holder
				if lerr == nil {
					holder = holderOf(f)
				}
				f.close()
				d.putDir(h)
				if lerr != nil {
					return nil, nil, false, fmt.Errorf("filestore: locking %s: %w", rel, lerr)
				}
				// Most often a session whose client just died (or was cut
				// off) and whose end the server has not seen yet. Open
				// afresh after the wait: the holder may rename or
				// remove the partial.
				if d.waitForHolder(holder, rel) {
					continue
				}
				return nil, nil, false, d.busy(rel)
			}
			// The holder we waited for may have renamed the file to its
			// final name (or removed it) before letting go: this
			// descriptor is that file then, not the temporary name's,
			// and writing it would change a committed file in place.
			// Or the partial is not one this side made: a second name
			// of another file (a hard link), which writing would change,
			// or another user's file, who could read what is written
			// (QA); locked, and still the file named so, its name goes
			// (a file linked elsewhere stays as it is). Either way the
			// temporary name is opened again.
			again := !h.stillNamed(d, tmp, f)
			var unlinkErr error
			if !again && !fresh && h.foreign(d, f) {
				again, unlinkErr = true, h.unlink(d, tmp)
			}
			if again {
				f.close()
				d.putDir(h)
				switch {
				case errors.Is(unlinkErr, fs.ErrPermission):
					return nil, nil, false, &stalePartialError{path.Join(dir, tmp)}
				case unlinkErr != nil && !errors.Is(unlinkErr, fs.ErrNotExist):
					return nil, nil, false, fmt.Errorf("filestore: %w", unlinkErr)
				}
				if renamed++; renamed < 100 {
					continue
				}
				return nil, nil, false, d.busy(rel)
			}
			d.register(f)
			if fresh {
				h.note(d, tmp)
			}
			return h, f, fresh, nil
		}
		var pe *fs.PathError
		stale := errors.As(err, &pe) && errors.Is(err, fs.ErrPermission) && h.exists(d, tmp)
		d.dropDir(h)
		d.putDir(h)
		if stale {
			// A partial left by an earlier transfer that ran as another
			// user: this side cannot know it is dead, nor lock it to
			// find out (kerf rm cannot either), so it leaves it, but
			// says what to do. (Not a PathError: the words must reach
			// the sender, who sees 94 characters.)
			return nil, nil, false, &stalePartialError{path.Join(dir, tmp)}
		}
		// A cached directory may have been removed since: open it afresh once.
		if reopened || !errors.Is(err, fs.ErrNotExist) {
			if pe == nil {
				return nil, nil, false, err // openTemp's own words, which say whose
			}
			// Said of the file, not of kerf's temporary name for it
			// (QA: ".big.bin.kerf-part: permission denied"); an error
			// about the directory stays its own.
			if path.Base(pe.Path) == tmp {
				named := *pe
				named.Path = rel
				return nil, nil, false, fmt.Errorf("filestore: %w", &named)
			}
			return nil, nil, false, fmt.Errorf("filestore: %w", err)
		}
		reopened = true
	}
}

// Room reports an error if the file system cannot take n more bytes for
// this file (kermit.RoomChecker): a file announced bigger than the free
// space is refused before its data, not after filling the disk. A sparse
// receive may need far less than n, so it is not refused.
func (in *incoming) Room(n int64) error {
	if in.sparse || n <= 0 {
		return nil
	}
	r := &in.h.room
	r.Lock()
	defer r.Unlock()
	if r.at.IsZero() || time.Since(r.at) > time.Second || n > r.free/2 {
		var st unix.Statfs_t
		err := in.h.atDir(in.d, func(dirfd int) error { return unix.Fstatfs(dirfd, &st) })
		if err != nil || st.Bsize <= 0 {
			return nil // unknown: let the writes tell
		}
		r.free, r.at = math.MaxInt64, time.Now()
		if int64(st.Bavail) <= math.MaxInt64/int64(st.Bsize) {
			r.free = int64(st.Bavail) * int64(st.Bsize)
		}
	}
	if n > r.free {
		return fmt.Errorf("filestore: %s needs %d bytes, %d are free: %w", in.final, n, r.free, unix.ENOSPC)
	}
	r.free -= n
	return nil
}

// incoming is a file being received as tmp in directory h, to be renamed
// base there.
type incoming struct {
	d         *Dir
	h         *dirHandle // released by Commit or Abort
	final     string     // relative to the tree's top
	dir       string     // h's directory, relative to the tree's top
	base, tmp string     // names in h
	f         *tempFile
	unnamed   bool // f is an unnamed file, linked under base once complete (unnamed.go)
	told      bool // WillHold was called
	released  bool
	batched   bool // committed in a batch, not flushed yet
	// recorded is the gap-free length a receiver that stopped cleanly
	// recorded on this partial (user.kerf.prefix), taken off the file
	// when it was opened: trusted by Partial, void after a Truncate.
	recorded    int64
	hasRecorded bool
	// prepared: Partial or Truncate ran (or the file is new), so what the
	// file holds was received in this session from a known start; only
	// then may Abort record its length as data.
	prepared bool
	touched  atomic.Bool // written to in this session
	empty    atomic.Bool // known to be empty: created here, nothing written
	// existingIno is the inode number of the file Existing found.
	existingIno uint64

	// Sparse files: writes of zeros at or after zeroFrom (where the file
	// is known to hold nothing) are skipped, and holeEnd is the furthest
	// such write ends, up to which Commit extends the file.
	sparse   bool
	zeroFrom atomic.Int64
	holeEnd  atomic.Int64
}

// sparseMin is the shortest write that may become a hole: a page, and
// a block of the usual file systems.
const sparseMin = 4096

func (in *incoming) release() {
	if !in.released {
		in.released = true
		in.d.putDir(in.h)
	}
}

func (in *incoming) Name() string { return in.final }

// Saved reports whether the received file rel is under its final name,
// with no temporary file of it left (kermit's savedChecker): after a
// batch whose flush failed, the files it did rename are safe.
func (d *Dir) Saved(rel string) bool {
	fi, err := d.root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	dir, base := path.Split(rel)
	_, err = d.root.Lstat(path.Join(dir, TempName(base)))
	return errors.Is(err, fs.ErrNotExist)
}

// Existing reports the file already under the final name, if it is a
// regular file (kermit.ExistingFile): a resume skips one that matches.
func (in *incoming) Existing() (int64, time.Time, bool) {
	st, err := in.h.lstat(in.d, in.base)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, time.Time{}, false
	}
	in.existingIno = uint64(st.Ino)
	return st.Size, time.Unix(st.Mtim.Unix()), true
}

// ExistingIno is the inode number of the file Existing last found
// (kermit.ExistingInode), 0 before.
func (in *incoming) ExistingIno() uint64 { return in.existingIno }

// KeepExisting sets the permission bits of the file already under the
// final name to perm (kermit.ExistingKeeper): a resume that finds the
// file whole does not send it, but a mode changed since still arrives,
// as with rsync -a. Unlike a Commit, which renames a new file over the
// name, this changes the file in place, so it acts only on the very
// file it checked (opened without following a link, with O_PATH where
// there is one, and changed through that descriptor) and only if no other name links to
// it: a hard link planted in the tree must not carry a mode out of it.
func (in *incoming) KeepExisting(perm fs.FileMode) error {
	if err := in.d.writable("chmod"); err != nil {
		return err
	}
	if err := plainName(in.base); err != nil {
		return err
	}
	err := in.h.atDir(in.d, func(dirfd int) error {
		fd, err := unix.Openat(dirfd, in.base, openToChmod, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: in.final, Err: err}
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return &fs.PathError{Op: "stat", Path: in.final, Err: err}
		}
		switch {
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			return fmt.Errorf("filestore: %s is not a regular file", in.final)
		case fs.FileMode(st.Mode)&fs.ModePerm == perm.Perm():
			return nil
		case st.Nlink != 1:
			return fmt.Errorf("filestore: %s has other links; its mode is left alone", in.final)
		}
		if err := chmodOpened(fd, uint32(perm.Perm())); err != nil {
			return &fs.PathError{Op: "chmod", Path: in.final, Err: err}
		}
		return nil
	})
	if err == nil {
		// Kept: as good as received, for UniqueNames. (Not before: one
		// that fails is received again, and noted then; review.)
		in.d.noteCommitted(in.final)
	}
	return err
}

func (in *incoming) WriteAt(b []byte, off int64) (int, error) {
	if err := in.settle(); err != nil {
		return 0, err
	}
	in.empty.Store(false)
	in.touched.Store(true)
	if in.sparse && len(b) >= sparseMin && off >= in.zeroFrom.Load() && allZero(b) {
		end := off + int64(len(b))
		for {
			e := in.holeEnd.Load()
			if e >= end || in.holeEnd.CompareAndSwap(e, end) {
				break
			}
		}
		return len(b), nil
	}
	return in.f.WriteAt(b, off)
}

var zeros [64 << 10]byte

// allZero reports whether b holds only zero bytes; data that does not
// is told at its first non-zero byte.
func allZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeros))
		if !bytes.Equal(b[:n], zeros[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

// Partial reports the partial file's gap-free prefix. Blocks from
// several data connections land out of order, so a receiver killed
// mid-transfer (no keepPartial to cut the file) leaves holes before the
// end; the CRC of the whole would then never match the sender's and
// recovery would start again from 0. The file is cut at its first hole.
func (in *incoming) Partial() (int64, uint32, error) {
	if err := in.settle(); err != nil {
		return 0, 0, err
	}
	size, err := in.f.size()
	if err != nil {
		return 0, 0, err
	}
	cut := in.f.firstHole(size)
	if in.hasRecorded && in.recorded <= size {
		// Kept by a receiver that stopped cleanly: everything up to the
		// record was received, holes included (a sparse receive's zeros).
		cut = in.recorded
	}
	in.prepared = true
	if cut < size {
		if err := in.f.truncate(cut); err != nil {
			return 0, 0, err
		}
		size = cut
	}
	// Nothing lies beyond size now: a sparse receive may leave holes
	// there again. (A sparse partial left by a crash, with no recorded
	// prefix, is cut at its first hole, so a disk image resumes from
	// about its first run of zeros.)
	in.zeroFrom.Store(size)
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	if _, err := io.Copy(h, io.NewSectionReader(in.f, 0, size)); err != nil {
		return 0, 0, err
	}
	return size, h.Sum32(), nil
}

func (in *incoming) Truncate(size int64) error {
	if err := in.settle(); err != nil {
		return err
	}
	in.prepared = true
	if in.hasRecorded && in.recorded > size {
		in.hasRecorded = false // the recorded range is cut
	}
	if size == 0 && in.empty.Load() {
		return nil
	}
	if err := in.f.truncate(size); err != nil {
		return err
	}
	in.zeroFrom.Store(size) // nothing beyond it now
	if in.holeEnd.Load() > size {
		in.holeEnd.Store(size)
	}
	return nil
}

// Commit makes the data durable (fsync), sets mode and time, renames
// the file to its final name and makes the rename durable (fsync of the
// directory). Every step works on the open file or on one name in the
// directory's cached handle. In a batch (BeginBatch) it sets mode and
// time and leaves the rest to the batch's flush.
func (in *incoming) Commit(modTime time.Time, perm fs.FileMode) error {
	if in.released {
		return errors.New("filestore: commit of a finished file")
	}
	if err := in.settle(); err != nil {
		return err
	}
	if end := in.holeEnd.Load(); end > 0 {
		// The file ends in a hole: give it its length.
		size, err := in.f.size()
		if err != nil {
			return err
		}
		if end > size {
			if err := in.f.truncate(end); err != nil {
				return err
			}
		}
	}
	if err := in.f.chmod(perm); err != nil {
		return err
	}
	if !modTime.IsZero() {
		// Through the descriptor: the name may be another file's by now.
		if err := in.f.chtimes(modTime); err != nil {
			return err
		}
	}
	d := in.d
	d.noteCommitted(in.final)
	if d.batching {
		in.released = true // the flush gives back the directory handle
		in.batched = true
		d.pending = append(d.pending, in)
		if d.pendingN == nil {
			d.pendingN = make(map[string]bool)
		}
		d.pendingN[in.dir+"/"+in.tmp] = true
		switch n := batchedFiles.Add(1); {
		case n > batchBudget():
			// The process holds its share of descriptors in batches
			// already (many sessions at once): this batch gives its
			// back now, not at 256 files, so that no session's file
			// fails for "too many open files".
			d.flushPending()
		case len(d.pending) >= maxBatch:
			d.flushInBackground()
		}
		return nil
	}
	if err := in.f.syncOrEmpty(); err != nil {
		return err
	}
	// Rename while still holding the file (and its lock), so that no
	// other session can open this temporary name in between.
	if err := in.name(); err != nil {
		if err == errNotOurs {
			return fmt.Errorf("filestore: %s: %w", in.final, err)
		}
		return err
	}
	if err := in.f.close(); err != nil {
		return err
	}
	// The rename is durable only once its directory is synced.
	err := in.h.sync(d)
	in.release()
	return err
}

// fileInTheWay refuses, with UniqueNames, a directory rel (or one of its
// parents) that a file of this transfer is named, committed or under
// way (in another session of it too, with a shared Names): two filespecs may
// name a file and a directory of one name, and the directory made for
// the second would stand where the first is to be renamed.
func (d *Dir) fileInTheWay(rel string) error {
	return d.names().free(rel, func() error { return nil })
}

// noteCommitted records a final name this Dir has stored (or kept), for
// UniqueNames.
func (d *Dir) noteCommitted(rel string) {
	d.names().add(rel)
}

// names is the set of names UniqueNames checks; nil (whose methods do
// nothing) without UniqueNames.
func (d *Dir) names() *NameSet {
	if !d.UniqueNames {
		return nil
	}
	if d.Names == nil {
		d.Names = &NameSet{}
	}
	return d.Names
}

// NameSet is the final names of a transfer's files, committed or under
// way, safe for concurrent use (Dir.Names). A nil NameSet holds nothing
// and takes nothing.
type NameSet struct {
	mu        sync.Mutex
	committed map[string]bool
	underWay  map[string]int
}

func (n *NameSet) add(rel string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.committed == nil {
		n.committed = make(map[string]bool)
	}
	n.committed[rel] = true
	n.endLocked(rel)
}

// has reports whether a file was committed under rel.
func (n *NameSet) has(rel string) bool {
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.committed[rel]
}

// free runs mk (which makes the directory rel) unless a file was
// committed, or is being received, under rel or one of its parents:
// checked and made under the set's lock, so that no file begins there
// in between.
func (n *NameSet) free(rel string, mk func() error) error {
	if n == nil {
		return mk()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if n.committed[p] || n.underWay[p] > 0 {
			return fmt.Errorf("filestore: %s: a file of that name was already received in this transfer; no directory made there", p)
		}
	}
	return mk()
}

// begin notes a file being received under rel, unless isDir says a
// directory stands there (one made meanwhile), checked under the lock.
func (n *NameSet) begin(rel string, isDir func() bool) error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if isDir() {
		return fmt.Errorf("filestore: %s exists and is not a regular file", rel)
	}
	if n.underWay == nil {
		n.underWay = make(map[string]int)
	}
	n.underWay[rel]++
	return nil
}

func (n *NameSet) abandon(rel string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.endLocked(rel)
}

func (n *NameSet) endLocked(rel string) {
	if n.underWay[rel] > 0 {
		n.underWay[rel]--
	}
}

// maxBatch bounds the committed files (and their open descriptors) a
// batch holds before it flushes on its own.
const maxBatch = 256

// batchedFiles counts the committed files all Dirs' batches hold open,
// against batchBudget: with many sessions receiving at once (each batch
// up to maxBatch, and as many again being flushed) they would otherwise
// run the process out of descriptors (QA: 20 sessions under a limit of
// 1,024 failed 19 of 20 transfers with "too many open files").
var batchedFiles atomic.Int64

// batchBudget is a quarter of the process's descriptor limit (read once;
// Go raises the soft limit to the hard one at start), at least 64: the
// rest is for connections, directories and the files being moved.
var batchBudget = sync.OnceValue(func() int64 {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return 1 << 20
	}
	return max(int64(lim.Cur/4), 64)
})

// syncWorkers is how many fsyncs a flush has in flight: a journaling
// file system commits concurrent fsyncs together.
const syncWorkers = 8

// BeginBatch starts deferring the fsyncs of committed files: Commit then
// only sets mode and time, and EndBatch (or every maxBatch files, or
// Close) makes the batch durable in the order that keeps a crash safe:
// every file's data is synced (several at once), then each file is
// renamed to its final name, then each directory that got a name is
// synced once. Until then a committed file keeps its temporary name; a
// crash leaves it there, complete, for recovery. The kermit engine
// batches each received file group and ends the batch before it
// acknowledges the group's B packet.
func (d *Dir) BeginBatch() {
	d.revalidateDirs()
	d.batching = true
}

// EndBatch flushes the batch (see BeginBatch) and stops batching.
func (d *Dir) EndBatch() error {
	d.batching = false
	return d.flushBatch()
}

// flushInBackground hands the full batch to a goroutine that flushes
// it while the receiver goes on with the next files: the syncs, renames
// and closes of a batch then stay off the path of the transfer. One
// flush runs at a time. An error of one (naming its file) is kept for
// flushBatch, so that EndBatch, before the group's B is acknowledged,
// reports it, and no Commit reports another file's failure as its own.
func (d *Dir) flushInBackground() {
	d.keepFlushErr(d.waitFlush())
	fl := &flush{names: d.pendingN, done: make(chan struct{})}
	files := d.pending
	d.pending, d.pendingN = nil, nil
	d.flushing = fl
	go func() {
		fl.err = d.flushFiles(files)
		close(fl.done)
	}()
}

// keepFlushErr remembers the first error of background flushes.
func (d *Dir) keepFlushErr(err error) {
	if d.flushErr == nil {
		d.flushErr = err
	}
}

// waitFlush waits for a background flush, if any, and returns its error.
func (d *Dir) waitFlush() error {
	fl := d.flushing
	if fl == nil {
		return nil
	}
	<-fl.done
	d.flushing = nil
	return fl.err
}

// flushBatch makes the pending files durable under their final names,
// after any background flush. A file whose sync or rename fails keeps
// its temporary name; the first such error, of this flush or an earlier
// one, is returned.
func (d *Dir) flushBatch() error {
	d.flushPending()
	err := d.flushErr
	d.flushErr = nil
	return err
}

// flushPending is flushBatch without taking the error: it stays for the
// batch's end to report.
func (d *Dir) flushPending() {
	d.keepFlushErr(d.waitFlush())
	files := d.pending
	d.pending, d.pendingN = nil, nil
	d.keepFlushErr(d.flushFiles(files))
}

// flushFiles syncs, renames and closes committed files, then syncs their
// directories. It touches the Dir only through its locked handle cache,
// so it may run beside the receiving goroutine.
func (d *Dir) flushFiles(files []*incoming) error {
	if len(files) == 0 {
		return nil
	}
	errs := make([]error, len(files))
	// A large batch first gets one syncfs per file system: a single
	// journal commit writes all of it, where fsyncs one by one (eight
	// at a time) each waited for one. The fsyncs still follow, and are
	// then cheap: syncfs reports a write-back error to whichever
	// descriptor asks first (the cached directory's, shared by later
	// batches) and not at all before Linux 5.8, while fsync reports
	// each file's own.
	if len(files) >= syncfsMin {
		d.syncFilesystems(files) // an error shows again in the fsyncs
	}
	// Workers take the next file from a counter, not a channel: on a
	// file system where fsync is quick (tmpfs) a hand-off per file cost
	// more than the syncs.
	var next atomic.Int64
	syncFrom := func() {
		for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
			errs[i] = files[i].f.syncOrEmpty()
		}
	}
	var wg sync.WaitGroup
	for range min(syncWorkers, len(files)) - 1 {
		wg.Go(syncFrom)
	}
	syncFrom()
	wg.Wait()
	dirty := make(map[*dirHandle]bool)
	for i, in := range files {
		if errs[i] == nil {
			if errs[i] = in.name(); errs[i] == nil {
				dirty[in.h] = true
			}
		}
		if err := in.f.close(); errs[i] == nil {
			errs[i] = err
		}
		batchedFiles.Add(-1)
		if errs[i] != nil {
			errs[i] = fmt.Errorf("filestore: completing %s: %w", in.final, errs[i])
		}
	}
	// The renames are durable once their directories are synced, and
	// the directories made for them once theirs are.
	synced := make(map[string]bool, len(dirty))
	for h := range dirty {
		synced[h.rel] = true
		if err := h.sync(d); err != nil {
			errs = append(errs, fmt.Errorf("filestore: syncing directory %s: %w", h.rel, err))
		}
	}
	errs = append(errs, d.syncMadeIn(synced)...)
	for _, in := range files {
		d.putDir(in.h)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (in *incoming) Abort(keep bool) error {
	if in.batched {
		return nil // committed; the batch's flush owns the file now
	}
	in.d.names().abandon(in.final)
	// The file is closed (and its lock released) only after any removal,
	// so that the removal never hits another session's file.
	defer in.f.close()
	if in.released {
		return nil
	}
	defer in.release()
	if in.f.closed {
		return nil // its descriptor number may be another file's now
	}
	if in.unnamed {
		// Closing it frees it. What arrived is not kept for a resume,
		// as a partial under the temporary name would be: it is at most
		// Dir.UnnamedMax bytes, sent again in a moment, and a partial
		// linked now might be left behind for good by a session that
		// ends after its successor has the file (unnamed.go).
		return nil
	}
	if keep {
		if size, err := in.f.size(); err == nil && size > 0 {
			if in.prepared {
				// The engine cut the file to what it received without a
				// gap before keeping it: all of it is data, whatever
				// holes a sparse receive left in it.
				in.f.setPrefix(size)
			} else if in.hasRecorded && in.recorded <= size && !in.touched.Load() {
				// Opened and left untouched: the old record still holds.
				in.f.setPrefix(in.recorded)
			}
			return nil
		}
	}
	if !in.h.isOurs(in.d, in.tmp, in.f) {
		return nil // gone, or another's file now: not this one to remove
	}
	return in.h.root.Remove(in.tmp)
}

// Match resolves a GET filespec: names separated by spaces (braces
// group a name with spaces), each possibly with wildcards in its last
// element; a name that exists as it is is taken literally (see glob). With recursive, a directory stands for everything under it,
// named relative to the directory's parent. A wildcard passes over what
// it matches that cannot be sent (directories, without recursive); a
// name given plainly that cannot be sent is an error.
func (d *Dir) Match(spec string, recursive bool) ([]kermit.OutgoingFile, error) {
	var out []kermit.OutgoingFile
	if _, err := d.MatchWalk(spec, recursive, nil, func(f kermit.OutgoingFile) bool {
		out = append(out, f)
		return true
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// MatchWalk is Match handing the entries to yield one at a time as the
// walk finds them, until yield returns false, keeping of what trees
// walked hold only the entries keep accepts by the name they are sent
// under (directories are all kept; a nil keep keeps all), and saying how
// many it left out: a GET of a million files holds only the walk's
// current directories, not its listing, its first files go while the
// rest are still being found, and a session serving one share of a tree
// stats only its share. An error of
// the whole spec (a single name that does not exist or cannot be sent)
// comes before any entry. (Not named as a kermit interface's method: a
// ServerFS that embeds a Dir and wraps its Match would have its wrapper
// passed over.)
func (d *Dir) MatchWalk(spec string, recursive bool, keep func(name string) bool, yield func(kermit.OutgoingFile) bool) (left int, err error) {
	names, err := d.specNames(spec)
	if err != nil {
		return 0, err
	}
	for _, n := range names {
		var bad error // what makes a name given plainly unsendable
		var target fs.FileInfo
		var targetErr error
		if n.err == nil && n.fi.Mode()&fs.ModeSymlink != 0 && !d.linksToPart(n.rel) {
			// A link to a file in the tree sends the file, as in a
			// walk (-r); os.Root refuses one leading out.
			target, targetErr = d.root.Stat(n.rel)
		}
		more := true
		switch fi := n.fi; {
		case n.err != nil:
			bad = n.err
		case fi.Mode().IsRegular():
			more = yield(d.outgoing(n.rel, path.Base(n.rel), fi, false))
		case target != nil && target.Mode().IsRegular():
			more = yield(d.outgoing(n.rel, path.Base(n.rel), target, true))
		case fi.IsDir() && recursive:
			more = d.walk(n.rel, n.contents, keep, &left, yield)
		case target != nil && target.IsDir() && recursive && !n.pattern:
			// A link to a directory named plainly: its tree, under the
			// link's name, as send -r does with a local one and as
			// "link/" is (the walk itself follows no link to a
			// directory, so there is no loop).
			more = d.walk(n.rel, n.contents, keep, &left, yield)
		case n.pattern && fi.Mode()&fs.ModeSymlink != 0 && target == nil && targetErr == nil:
			// A link to a partial: never served, as in a walk.
		case n.pattern && targetErr != nil:
			// A link leading nowhere or out of the tree, found by a
			// wildcard: named as failed, as a walk names it.
			more = yield(unreadable(path.Base(n.rel), fmt.Errorf("filestore: %w", targetErr)))
		case n.pattern:
			// A wildcard passes over directories (without -r) and
			// special files, and says so, as a walk does and as rsync
			// does ("skipping directory"): they went unmentioned (QA).
			what := EntryKind(fi.Mode())
			switch {
			case fi.IsDir():
				what = "a directory (not copied without -r)"
			case target != nil && target.IsDir():
				what = "a link to a directory"
			case target != nil:
				what = "a link to " + EntryKind(target.Mode())
			}
			more = yield(kermit.OutgoingFile{Name: path.Base(n.rel), Size: -1,
				Open: func() (kermit.FileReader, error) { return nil, kermit.PassedOver(what) }})
		case fi.IsDir():
			bad = fmt.Errorf("filestore: %s is a directory (use -r)", n.rel)
		case targetErr != nil && !errors.Is(targetErr, fs.ErrNotExist):
			bad = targetErr // leading out: the caller says so in words
		case target != nil && target.IsDir():
			bad = fmt.Errorf("filestore: %s is a link to a directory (use -r)", n.rel)
		default:
			bad = fmt.Errorf("filestore: %s is not a regular file (%s)", n.rel, EntryKind(fi.Mode()))
		}
		if !more {
			return left, nil
		}
		if bad == nil {
			continue
		}
		if len(names) == 1 {
			return 0, bad
		}
		// One of several names: the others still go, and this one is
		// reported as not sent (as a file that cannot be read is).
		if !yield(unreadable(path.Base(n.rel), bad)) {
			return left, nil
		}
	}
	return left, nil
}

// EntryKind names what an entry of mode m is, for a message ("a named
// pipe"): the sending client's walk and a server's say the same.
func EntryKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeIrregular != 0:
		return "of an unknown type"
	}
	return "a regular file"
}

// linksToPart reports whether the symbolic link rel names a partial
// file (.NAME.kerf-part), which is never served, through a link either:
// followed link by link, as far as the kernel would (40), so that a
// link to a link to a partial is caught too (review). A chain that
// cannot be read counts as one.
func (d *Dir) linksToPart(rel string) bool {
	for range 40 {
		to, err := d.root.Readlink(rel)
		if err != nil {
			return false // not a link (any more): what it names is no partial
		}
		if IsPartName(path.Base(to)) {
			return true
		}
		if path.IsAbs(to) {
			return false // leading out: os.Root refuses it anyway
		}
		rel = path.Join(path.Dir(rel), to)
		if fi, err := d.root.Lstat(rel); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return false
		}
	}
	return true
}

// specName is a name a filespec resolved to, relative to the tree's top,
// and its entry (not following a link); pattern reports that a wildcard
// found it rather than the spec naming it.
type specName struct {
	rel      string
	pattern  bool
	contents bool // named as "dir/." or "dir/..": a walk names entries from within it
	fi       fs.FileInfo
	err      error // of one of several names, that names nothing usable
	nomatch  bool  // err is of a pattern, one of several, that matched nothing
}

// specNames splits spec into names (see Match) and resolves each to its
// entry. A name given plainly that does not exist is an error; one a
// wildcard found and that is gone since its directory was read is left
// out.
func (d *Dir) specNames(spec string) ([]specName, error) { return d.specNamesOf(spec, false) }

// specNamesOf is specNames, or with literal the one entry spec names as
// it is: no split into names, no pattern (ListLiteral).
func (d *Dir) specNamesOf(spec string, literal bool) ([]specName, error) {
	pats := []string{spec}
	if !literal {
		pats = d.specPatterns(spec)
	}
	if err := checkSpecSize(pats); err != nil {
		return nil, err
	}
	var out []specName
	// Each entry once, however many names find it: a GET of "* * * …"
	// held every match once a star (QA: 8 KB of stars, 800 MB).
	seen := map[string]bool{}
	for _, pat := range pats {
		rel, err := d.resolve(pat)
		if err == nil {
			var more []specName
			more, err = d.globOrLiteral(rel, literal)
			if e := path.Base(pat); len(more) == 1 && (e == "." || e == "..") {
				// Its contents, as send -r has "dir/." (cp's rule).
				more[0].contents = true
			}
			if len(more) == 1 && more[0].fi.Mode()&fs.ModeSymlink != 0 && strings.HasSuffix(pat, "/") {
				// "link/" is the directory the link leads to, as for
				// ls(1); os.Root follows it only within the tree.
				if fi, serr := d.root.Stat(rel); serr == nil && fi.IsDir() {
					more[0].fi = fi
				}
			}
			if len(more) == 1 && strings.HasSuffix(pat, "/") && more[0].fi.Mode().IsRegular() && err == nil {
				// "f/" names a directory, as for ls(1) and rm(1):
				// never the file f (QA: get host/file/ took the file).
				more, err = nil, fmt.Errorf("filestore: %s: %w", rel, unix.ENOTDIR)
			}
			found := len(more)
			for _, m := range more {
				if !seen[m.rel] {
					seen[m.rel] = true
					out = append(out, m)
				}
			}
			if err == nil && found == 0 && len(pats) > 1 {
				// A wildcard among several names that matches
				// nothing: a GET says so (QA: it was passed over
				// in silence, exit 0, where alone it fails).
				out = append(out, specName{rel: pat, pattern: true, nomatch: true, err: fmt.Errorf("filestore: no files match %s", pat)})
			}
		}
		if err != nil {
			if len(pats) == 1 {
				return nil, err
			}
			// One of several names: the caller decides (Match sends
			// the others, List fails).
			out = append(out, specName{rel: pat, err: err})
		}
	}
	return out, nil
}

// maxSpecNames and maxSpecWildcards bound what one request may name:
// each wildcard reads its directory, so a spec of thousands would make
// the server read a large directory thousands of times for one packet
// (QA). A client splits longer lists into several GETs of at most
// 4,000 bytes, well within these.
const (
	maxSpecNames     = 4096
	maxSpecWildcards = 256
)

// checkSpecSize refuses a spec of more names, or wildcards, than one
// request may have.
func checkSpecSize(pats []string) error {
	if len(pats) > maxSpecNames {
		return fmt.Errorf("filestore: %d names in one request: at most %d", len(pats), maxSpecNames)
	}
	n := 0
	for _, p := range pats {
		if hasWildcard(path.Base(p)) {
			n++
		}
	}
	if n > maxSpecWildcards {
		return fmt.Errorf("filestore: %d wildcards in one request: at most %d", n, maxSpecWildcards)
	}
	return nil
}

// specPatterns splits spec into its names (framing.SplitSpec), unless
// spec, or spec without its outer braces, names an existing entry
// whole: C-Kermit 10 sends a GET of {a b} as "a b", and a name such as
// "a} {b" cannot be quoted so that it splits back (framing.JoinSpec),
// so clients send it alone.
func (d *Dir) specPatterns(spec string) []string {
	pats := framing.SplitSpec(spec)
	whole := []string{spec}
	if len(spec) > 2 && spec[0] == '{' && spec[len(spec)-1] == '}' {
		// One brace-quoted name: braces inside it ("{a {b}.txt}",
		// "{c{d e}") would split it wrongly.
		whole = append(whole, spec[1:len(spec)-1])
	}
	for _, w := range whole {
		if len(pats) == 1 && pats[0] == w {
			break
		}
		if rel, err := d.resolve(w); err == nil {
			if _, err := d.root.Lstat(rel); err == nil {
				return []string{w}
			}
		}
	}
	return pats
}

// globOrLiteral is glob, or with literal rel's own entry only.
func (d *Dir) globOrLiteral(rel string, literal bool) ([]specName, error) {
	if !literal {
		return d.glob(nil, rel)
	}
	fi, err := d.root.Lstat(rel)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	return []specName{{rel: rel, fi: fi}}, nil
}

// hasWildcard reports whether a name element has path.Match's wildcards.
func hasWildcard(elem string) bool { return strings.ContainsAny(elem, "*?[") }

// glob appends to out what rel names: rel itself if it has no wildcards
// or names an existing entry, else the entries of its directory that its
// last element matches as a pattern (never temporary files, and names
// with a leading dot only for a pattern with one). An
// existing name wins because a peer has no way to quote *, ? and [
// (CleanName refuses the backslash): "star*" would otherwise always
// bring "stardust" too, and "brk[et" nothing at all.
func (d *Dir) glob(out []specName, rel string) ([]specName, error) {
	dir, base := splitRel(rel)
	if !hasWildcard(base) {
		fi, err := d.root.Lstat(rel)
		if err != nil {
			return nil, fmt.Errorf("filestore: %w", err)
		}
		return append(out, specName{rel: rel, fi: fi}), nil
	}
	if fi, err := d.root.Lstat(rel); err == nil {
		return append(out, specName{rel: rel, fi: fi}), nil
	}
	// [!a] as the shell has it (QA: it matched a, as path.Match's
	// class of '!' and 'a').
	base = kermit.GlobClasses(base)
	if _, err := path.Match(base, ""); err != nil {
		return nil, fmt.Errorf("filestore: %s: %w", rel, err)
	}
	ents, done, err := readDir(d.root, dir)
	defer done()
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	for _, e := range ents {
		// A leading dot is matched only by one in the pattern, as shells
		// and C-Kermit (SET MATCH DOTFILE OFF) match it: "*" must not
		// bring .ssh or .netrc along.
		if strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		if ok, _ := path.Match(base, e.Name()); ok && !IsPartName(e.Name()) {
			fi, err := e.Info()
			switch {
			case err == nil:
				out = append(out, specName{rel: path.Join(dir, e.Name()), pattern: true, fi: fi})
			case !errors.Is(err, fs.ErrNotExist): // (gone: passed over)
				return nil, fmt.Errorf("filestore: %w", err)
			}
		}
	}
	return out, nil
}

// walk hands yield the regular files under directory top, named
// relative to its parent (to top itself with contents), and says
// whether yield wanted them all. An entry that cannot be read (a
// directory without permission, a file whose details cannot be had)
// does not end the walk: it becomes a file whose Open returns the
// error, so that the sending engine sends the rest and reports that one
// as failed, by name.
func (d *Dir) walk(top string, contents bool, keep func(string) bool, dropped *int, yield func(kermit.OutgoingFile) bool) bool {
	parent := path.Dir(top)
	if contents {
		parent = top // named from within: top itself is "."
	}
	name := func(p string) string {
		switch {
		case p == parent:
			return "."
		case parent == ".":
			return p
		}
		return strings.TrimPrefix(p, parent+"/")
	}
	// A directory is Filled when the entry after it, kept or left out,
	// is in it (MarkFilled's rule, decided as the walk goes, so that
	// entries left out count): dir is the last directory entry, held
	// back until the next entry decides it.
	var dir *kermit.OutgoingFile
	stopped := false
	follows := func(n string) {
		if dir != nil {
			dir.Filled = n == dir.Name || strings.HasPrefix(n, dir.Name+"/")
			held := *dir
			dir = nil
			if !yield(held) {
				stopped = true
			}
		}
	}
	add := func(f kermit.OutgoingFile) {
		follows(f.Name)
		if stopped {
			return
		}
		if !f.Dir && keep != nil && !keep(f.Name) {
			*dropped++
			return
		}
		if f.Dir {
			dir = &f
			return
		}
		if !yield(f) {
			stopped = true
		}
	}
	walkDir(d.root, top, func(p string, e fs.DirEntry, err error) error {
		if stopped {
			return fs.SkipAll
		}
		if err != nil {
			// A directory that could not be read (WalkDir goes on with
			// any entries it did read): reported, not made empty.
			add(unreadable(name(p), fmt.Errorf("filestore: %w", err)))
			return nil
		}
		if e.IsDir() {
			if p != top && IsPartName(e.Name()) {
				// Named as kerf's partials are: never served, as
				// no receiver would store what is under it.
				return fs.SkipDir
			}
			// Every directory goes, before what is in it, with its
			// details (kermit.OutgoingFile.Dir); not the top of a
			// "." (its contents).
			if n := name(p); n != "." {
				if info, err := e.Info(); err == nil {
					add(kermit.OutgoingFile{Name: n, Dir: true,
						ModTime: info.ModTime(), Mode: info.Mode() & (fs.ModePerm | fs.ModeSticky), ModeKnown: true})
				}
			}
			return nil
		}
		if IsPartName(e.Name()) {
			return nil
		}
		if n := name(p); keep != nil && e.Type().IsRegular() && !keep(n) {
			// Left out before its stat: n sessions sharing a tree do
			// not each stat all of it.
			follows(n)
			*dropped++
			return nil
		}
		var info fs.FileInfo
		linked := e.Type()&fs.ModeSymlink != 0
		if e.Type().IsRegular() {
			info, err = e.Info()
			err = asNamed(err, p)
			// Made a link since its directory was read (QA: said to be
			// "a link to a symbolic link", and one leading out of the
			// tree passed over, not refused): taken as the link it is.
			linked = err == nil && info.Mode()&fs.ModeSymlink != 0
		}
		switch {
		case linked && d.linksToPart(p):
			return nil // a partial is never served
		case linked:
			// As the sending client does (scp -r): a link to a file in
			// the tree sends the file; os.Root refuses one leading out.
			info, err = d.root.Stat(p)
		}
		if err == nil && (info == nil || !info.Mode().IsRegular()) {
			// FIFOs, sockets, devices and links to directories are not
			// files to copy (rsync -r skips them too), but the client
			// hears of them, as the sending client warns of its own.
			what := EntryKind(e.Type())
			switch {
			case info == nil:
			case linked && info.IsDir():
				what = "a link to a directory"
			case linked:
				what = "a link to " + EntryKind(info.Mode())
			default: // no longer the file its directory listed
				what = EntryKind(info.Mode())
			}
			add(kermit.OutgoingFile{Name: name(p), Size: -1,
				Open: func() (kermit.FileReader, error) { return nil, kermit.PassedOver(what) }})
			return nil
		}
		if err != nil {
			// A link that leads nowhere or out of the tree was meant to
			// be a file: the client hears of it (announceUnsent).
			add(unreadable(name(p), fmt.Errorf("filestore: %w", err)))
			return nil
		}
		if n := name(p); keep != nil && !keep(n) {
			// Not even its entry is made (a share of a big tree).
			follows(n)
			*dropped++
			return nil
		}
		add(d.outgoing(p, name(p), info, linked))
		return nil
	})
	if dir != nil && !stopped {
		// The walk's last entry: nothing follows it, so it is empty.
		held := *dir
		dir = nil
		return yield(held)
	}
	return !stopped
}

// MarkFilled marks the directories of one walk's entries (directories
// before what is in them, as fs.WalkDir gives them) that have something
// under them, a file or a directory or an entry that could not be read:
// the directory's own such entry, or the next entry being inside it.
// The others, with nothing that would make them, go to every kerf peer
// as empty directories (kermit.OutgoingFile.Filled); walkTree uses it,
// and walk decides it by the same rule as it goes.
func MarkFilled(files []kermit.OutgoingFile) {
	for i := 0; i+1 < len(files); i++ {
		n, next := files[i].Name, files[i+1].Name
		files[i].Filled = files[i].Dir && (next == n || strings.HasPrefix(next, n+"/"))
	}
}

// asNamed is err, a DirEntry.Info's error, with the entry's path in the
// tree, rel, in place of the path the system used (the root's own path
// in front: a client must not see where its tree is on the server).
func asNamed(err error, rel string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: rel, Err: pe.Err}
	}
	return err
}

// unreadable is an entry of a GET that could not be read, for err
// (already saying "filestore:").
func unreadable(name string, err error) kermit.OutgoingFile {
	return kermit.OutgoingFile{
		Name: name, Size: -1,
		Open: func() (kermit.FileReader, error) { return nil, err },
	}
}

// outgoing is the file rel, to be sent as name; fi is its entry, or the
// entry a symlink at rel leads to (link).
func (d *Dir) outgoing(rel, name string, fi fs.FileInfo, link bool) kermit.OutgoingFile {
	m := listedAs(fi)
	open := func() (kermit.FileReader, error) { return d.openFile(rel, m) }
	if link {
		// os.Root follows the link, as long as it stays in the tree.
		// Only the file the link led to when listed: one it leads to
		// now (repointed at a partial, say) is not sent in its place.
		open = func() (kermit.FileReader, error) {
			f, err := d.root.Open(rel)
			if err != nil {
				return nil, err
			}
			if !m.is(f) {
				f.Close()
				return nil, fmt.Errorf("filestore: %s changed since it was listed", rel)
			}
			return f, nil
		}
	}
	return kermit.OutgoingFile{
		Name: name, Size: fi.Size(), ModTime: fi.ModTime(), ChangeTime: kermit.ChangeTimeOf(fi), Status: kermit.StatusOf(fi),
		Mode: fi.Mode().Perm(), ModeKnown: true, Open: open, Path: rel,
	}
}

// openFile opens the file rel for reading with one openat in its
// directory's cached handle, where os.Root.Open would walk the whole
// path again (an openat and an fcntl per element), which was a third
// of what a GET of many small files cost the server. O_NOFOLLOW: a
// file replaced by a symlink since the directory was read is refused,
// not followed out of the tree. The file opened must be the one the
// match found (fi, from a walk of the path under the root): a cached
// handle follows its directory, not the directory's name, so after the
// directory was renamed or replaced it would find another file, or one
// no longer in the tree. Then, or when the openat fails, the handle is
// dropped and the path is opened afresh from the root.
func (d *Dir) openFile(rel string, m listed) (*os.File, error) {
	dir, base := splitRel(rel)
	h, err := d.openDir(dir, false)
	if err != nil {
		return d.openMatched(rel, m)
	}
	f, err := h.openRead(d, base)
	if err == nil && m.is(f) {
		d.putDir(h)
		return f, nil
	}
	if err == nil {
		f.Close()
	}
	d.dropDir(h)
	d.putDir(h)
	return d.openMatched(rel, m)
}

// openMatched opens rel afresh from the root, and only if it is still
// the file its match found: one replaced since (by another file, or by
// a symlink, which os.Root would follow) is refused, not sent in its
// place under the match's size and time.
func (d *Dir) openMatched(rel string, m listed) (*os.File, error) {
	// O_NONBLOCK: a named pipe put in its place would block the open for
	// ever; it is not the file matched, and refused below.
	f, err := d.root.OpenFile(rel, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if m.is(f) || d.isPlainFileAt(rel, f) {
		// The file listed; or another put at its name since (a new
		// version renamed over it, as files are published), sent under
		// its own size and time (the sender takes them from the open
		// file, kermit.asOpened), as rsync sends what is there when its
		// turn comes.
		return f, nil
	}
	f.Close()
	return nil, fmt.Errorf("filestore: %s changed since it was listed", rel)
}

// listed is what a file listed for a GET was: its identity, kept
// rather than its whole FileInfo (a Stat_t each), since a big tree's
// listing holds one per file until it is sent.
type listed struct {
	id  fileID
	typ fs.FileMode
	fi  fs.FileInfo // only where the identity is not known
}

func listedAs(fi fs.FileInfo) listed {
	if id, ok := identityOf(fi); ok {
		return listed{id: id, typ: fi.Mode().Type()}
	}
	return listed{fi: fi, typ: fi.Mode().Type()}
}

// isPlainFileAt reports whether f, opened at rel, is the regular file
// rel itself names, reached through plain directories: os.Root follows
// links inside the tree (O_NOFOLLOW or not), and a replaced file is not
// taken through one, at its name or at a directory above it (a walk
// never follows a link to a directory). Best effort: the checks are
// not atomic with the open, and at worst take another file of the tree.
func (d *Dir) isPlainFileAt(rel string, f *os.File) bool {
	li, err := d.root.Lstat(rel)
	if err != nil || !li.Mode().IsRegular() || !listedAs(li).is(f) {
		return false
	}
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if di, err := d.root.Lstat(dir); err != nil || !di.IsDir() {
			return false
		}
	}
	return true
}

// identityOf is fi's device and inode, where its Sys says.
func identityOf(fi fs.FileInfo) (fileID, bool) {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return fileID{uint64(st.Dev), st.Ino}, true
	case *unix.Stat_t:
		return fileID{uint64(st.Dev), st.Ino}, true
	}
	return fileID{}, false
}

// is reports whether f is the file listed.
func (m listed) is(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || st.Mode().Type() != m.typ {
		// The type too: an inode number is reused at once once freed (a
		// file removed and a named pipe made in its place can have its
		// number).
		return false
	}
	if m.fi != nil {
		return os.SameFile(m.fi, st)
	}
	id, ok := identityOf(st)
	return ok && id == m.id
}

// List describes the entries matching spec (a directory or a pattern),
// one per line: type and permissions, size, modification time, name.
func (d *Dir) List(spec string) (string, error) { return d.list(spec, false) }

// ListLiteral is List of the one entry name names as it is, whatever
// wildcard characters it has (kermit.LiteralFS: a client's escaped name).
func (d *Dir) ListLiteral(name string) (string, error) { return d.list(name, true) }

func (d *Dir) list(spec string, literal bool) (string, error) {
	if strings.TrimSpace(spec) == "" {
		spec = "."
	}
	// Names and patterns as for GET (braces, "link/" and all); one name
	// that is a directory lists what it holds.
	names, err := d.specNamesOf(spec, literal)
	if err != nil {
		return "", err
	}
	var ents []fs.FileInfo
	if len(names) == 1 && names[0].err == nil && !names[0].pattern && names[0].fi.IsDir() {
		des, done, err := readDir(d.root, names[0].rel)
		defer done()
		if err != nil {
			return "", fmt.Errorf("filestore: %w", err)
		}
		for _, e := range des {
			// Partial files are listed (their owner may want them
			// gone: Remove takes them), though GET never serves one.
			info, err := e.Info()
			switch {
			case err == nil:
				ents = append(ents, info)
			case !errors.Is(err, fs.ErrNotExist): // (gone: passed over)
				return "", fmt.Errorf("filestore: %w", asNamed(err, path.Join(names[0].rel, e.Name())))
			}
		}
	} else {
		for _, n := range names {
			if n.nomatch {
				continue // a listing of what there is, as before
			}
			if n.err != nil {
				return "", n.err
			}
			ents = append(ents, n.fi)
		}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	var b []byte
	for _, e := range ents {
		b = framing.AppendListingLine(b, listingEntry(e.Name(), e))
	}
	return string(b), nil
}

// listingEntry is fi's listing line under name.
func listingEntry(name string, fi fs.FileInfo) framing.ListingEntry {
	return framing.ListingEntry{Mode: fi.Mode(), Size: fi.Size(), ModTime: fi.ModTime(), Name: name}
}

// HasWhole reports whether the tree has the regular file e names, with
// e's size, modification time (framing.SameModTime) and permission bits: a
// resumed GET need not fetch it (kermit.GetOptions.Skip).
func (d *Dir) HasWhole(e framing.ListingEntry) bool {
	if d.Flat || !e.Mode.IsRegular() {
		return false
	}
	rel, err := d.resolve(e.Name)
	if err != nil {
		return false
	}
	dir, base := splitRel(rel)
	if _, err := d.root.Lstat(path.Join(dir, TempName(base))); err == nil {
		return false // a leftover partial: the per-file check removes it
	}
	fi, err := d.root.Lstat(rel)
	return err == nil && fi.Mode().IsRegular() && e.Matches(fi.Size(), fi.ModTime(), fi.Mode())
}

// ListTree writes to w the listing lines (as List writes them) of what
// spec names and, for each directory among them, of everything under
// it, named by their paths from the current directory as spec gives
// them ("photos" lists "photos", "photos/a.jpg" and so on), a directory
// before what it holds. Links are listed, never followed. One name that
// does not exist is an error, as for List; of several, those that do
// not exist are left out, and so is what is in a directory that cannot
// be read: the listing says what is there, for a sender's quick check
// (protocol.md §6, item 7), where a missing entry only means the file
// is sent. With ino, each line carries the entry's inode number
// (framing.AppendListingLineIno), for a peer that tells its own files
// by them (kermit's capas4Inodes).
func (d *Dir) ListTree(spec string, ino bool, w io.Writer) error {
	return d.listTree(spec, w, false, ino)
}

// ListTreeLiteral is ListTree of the one entry name names as it is
// (kermit.LiteralFS).
func (d *Dir) ListTreeLiteral(name string, ino bool, w io.Writer) error {
	return d.listTree(name, w, true, ino)
}

func (d *Dir) listTree(spec string, w io.Writer, literal, ino bool) error {
	if strings.TrimSpace(spec) == "" {
		spec = "."
	}
	var line []byte
	emit := func(name string, fi fs.FileInfo) error {
		e := listingEntry(name, fi)
		if ino {
			e.Ino = kermit.StatusOf(fi).Ino
			line = framing.AppendListingLineIno(line[:0], e)
		} else {
			line = framing.AppendListingLineExact(line[:0], e)
		}
		_, err := w.Write(line)
		return err
	}
	pats := []string{spec}
	if !literal {
		pats = d.specPatterns(spec)
	}
	for _, pat := range pats {
		rel, err := d.resolve(pat)
		if err != nil {
			return err
		}
		names, err := d.globOrLiteral(rel, literal)
		if err != nil {
			if len(pats) == 1 || errors.Is(err, path.ErrBadPattern) {
				return err
			}
			continue // not there
		}
		// Each entry under its name from the current directory: the
		// pattern's own directory part and the entry's last element.
		dir := path.Dir(path.Clean(pat)) // "photos/." is photos
		for _, n := range names {
			top := path.Join(dir, path.Base(n.rel))
			if rel == d.cwd {
				top = "."
			}
			if !n.fi.IsDir() {
				if err := emit(top, n.fi); err != nil {
					return err
				}
				continue
			}
			err := walkDir(d.root, n.rel, func(p string, de fs.DirEntry, err error) error {
				if err != nil {
					if p == n.rel || de == nil {
						return fs.SkipDir
					}
					return nil // an unreadable directory: listed, not its contents
				}
				fi, err := de.Info()
				if err != nil {
					return nil // gone since it was read
				}
				name := top
				if p != n.rel {
					name = path.Join(top, strings.TrimPrefix(p, n.rel+"/"))
					if n.rel == "." {
						name = path.Join(top, p)
					}
				}
				if name == "." {
					return nil // the current directory itself: its contents follow
				}
				return emit(name, fi)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// Chdir changes the current directory within the tree.
func (d *Dir) Chdir(dir string) error {
	rel, err := d.resolveDir(dir)
	if err != nil {
		return err
	}
	fi, err := d.root.Stat(rel)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("filestore: %s is not a directory", rel)
	}
	d.cwd = rel
	return nil
}

// Pwd is the current directory as the client sees it.
func (d *Dir) Pwd() string {
	if d.cwd == "." {
		return "/"
	}
	return "/" + d.cwd
}

func (d *Dir) writable(op string) error {
	if d.ReadOnly {
		return fmt.Errorf("filestore: %s: read-only access", op)
	}
	return nil
}

// Remove deletes a file, or every regular file a pattern in name's last
// element matches when no entry has that name.
func (d *Dir) Remove(name string) error { return d.remove(name, false) }

// RemoveLiteral deletes the file name names as it is, never taking it
// for a pattern (kermit.LiteralFS): a client's escaped name, whose
// absence must not delete the files it would match.
func (d *Dir) RemoveLiteral(name string) error { return d.remove(name, true) }

func (d *Dir) remove(name string, literal bool) error {
	if err := d.writable("delete"); err != nil {
		return err
	}
	if strings.HasSuffix(name, "/") && name != "/" {
		// "f/" names a directory, as for rm(1): never the file f.
		return fmt.Errorf("filestore: %s: not a file (a name ending in / is a directory)", name)
	}
	if IsPartName(path.Base(name)) {
		return d.removePart(name)
	}
	rel, err := d.resolveToRemove(name)
	if err != nil {
		return err
	}
	if IsPartName(path.Base(rel)) {
		// A partial's name spelt otherwise (".x.kerf-part/."): the
		// same check of its lock (review).
		return d.removePartAt(rel)
	}
	fi, lerr := d.root.Lstat(rel)
	if lerr != nil && !literal && hasWildcard(path.Base(rel)) {
		return d.removeMatching(rel)
	}
	if lerr == nil && fi.IsDir() {
		return fmt.Errorf("filestore: %s is a directory", rel)
	}
	return d.root.Remove(rel)
}

// removeMatching deletes every regular file of its directory that the
// pattern rel's last element matches (REMOTE DELETE *.bin, as C-Kermit's
// server takes it). A file it may not delete does not stop the rest, as
// with rm(1); the error then says how many went and names those that
// did not (QA: the first refusal ended it, unsaid what was deleted).
func (d *Dir) removeMatching(rel string) error {
	matched, err := d.glob(nil, rel)
	if err != nil {
		return err
	}
	n, deleted := 0, 0
	var failed []string
	for _, m := range matched {
		if !m.fi.Mode().IsRegular() {
			continue
		}
		n++
		if err := d.root.Remove(m.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			why := err
			var pe *fs.PathError
			if errors.As(err, &pe) {
				why = pe.Err // the name is said already
			}
			failed = append(failed, fmt.Sprintf("%s (%v)", path.Base(m.rel), why))
			continue
		}
		deleted++
	}
	switch {
	case n == 0:
		return fmt.Errorf("filestore: %s: no files match", rel)
	case len(failed) > 0:
		const most = 8 // an E packet's worth
		more := ""
		if len(failed) > most {
			more = fmt.Sprintf(" and %d more", len(failed)-most)
			failed = failed[:most]
		}
		return fmt.Errorf("filestore: %s: deleted %d of %d matching files; not deleted: %s%s", rel, deleted, n, strings.Join(failed, ", "), more)
	}
	return nil
}

// CanRemoveSent says why files sent may not be removed (read-only
// access), or nil (kermit.SentRemover).
func (d *Dir) CanRemoveSent() error { return d.writable("delete") }

// RemoveSent removes f, a file of the tree a GET sent (f.Path, as the
// walk listed it), if it is still that file: a regular file, not a link,
// with the device and inode, size, modification time and ctime it was
// listed with (the sender fails a file that changes while it is sent,
// so what was listed is what went). Otherwise it stays, and the error
// says why.
func (d *Dir) RemoveSent(f kermit.OutgoingFile) error {
	if err := d.writable("delete"); err != nil {
		return err
	}
	rel, err := cleanName(f.Path, false)
	if err != nil {
		return err
	}
	fi, err := d.root.Lstat(rel)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("filestore: %s: not a regular file (a link's target was sent)", rel)
	}
	if why := kermit.ChangedSinceSent(fi, f.Size, f.ModTime, f.Status, f.ChangeTime); why != "" {
		return fmt.Errorf("filestore: %s %s", rel, why)
	}
	if err := d.root.Remove(rel); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	return nil
}

// removePart deletes a partial file left by a transfer that did not
// finish (its owner's only way to get the space back without a shell on
// the server), unless a session is receiving into it now: that session
// holds its lock.
func (d *Dir) removePart(name string) error {
	// The directory resolves as any name does (CleanName refuses the
	// partial's own name); the partial's name goes beside it.
	rdir, err := d.resolveToRemove(path.Dir(name))
	if err != nil {
		return err
	}
	return d.removePartAt(path.Join(rdir, path.Base(name)))
}

// removePartAt removes the partial file rel unless a session holds it.
func (d *Dir) removePartAt(rel string) error {
	if fi, err := d.root.Lstat(rel); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// A link planted under a partial's name, which a receive
		// refuses to write through and asks to have removed: the link
		// goes, not what it leads to (QA: refused as leading outside).
		return d.root.Remove(rel)
	}
	f, err := d.root.OpenFile(rel, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("filestore: %s is not a partial file", rel)
	}
	if ok, err := flockNB(int(f.Fd())); err != nil {
		return fmt.Errorf("filestore: locking %s: %w", rel, err)
	} else if !ok {
		return fmt.Errorf("%w: %s", ErrBusy, rel)
	}
	return d.root.Remove(rel)
}

// ReceiveDir creates a directory a peer sent (kermit.DirReceiver): as
// Mkdir, named as Create names files, so nothing in a flat store.
func (d *Dir) ReceiveDir(name string) error {
	if d.Flat {
		return nil
	}
	if err := d.expected(name); err != nil {
		return err
	}
	return leadsOutside(d.Mkdir(name), name)
}

// expected is Expect's word on a name sent, nil without one.
func (d *Dir) expected(name string) error {
	if d.Expect == nil {
		return nil
	}
	if err := d.Expect(name); err != nil {
		return fmt.Errorf("filestore: %s: refused: %w", name, err)
	}
	return nil
}

// MakeDir creates a directory a kerf peer sent with its attributes
// (kermit.DirAttrReceiver), and its parents, when missing: with perm and
// owner rwx, so that nothing the sender keeps private is open to others
// while the group arrives and its files can go in; SetDirAttrs gives the
// exact permissions at the group's end. Nothing in a flat store.
func (d *Dir) MakeDir(name string, perm fs.FileMode, havePerm bool) error {
	return leadsOutside(d.makeDir(name, perm, havePerm), name)
}

func (d *Dir) makeDir(name string, perm fs.FileMode, havePerm bool) error {
	if d.Flat {
		return nil
	}
	if err := d.expected(name); err != nil {
		return err
	}
	mode := fs.FileMode(0o755)
	if havePerm {
		mode = perm&fs.ModePerm | 0o700
	}
	rel, err := d.mkdirAll(name, mode)
	if err != nil {
		return err
	}
	// One already there (an earlier transfer made it read-only, as its
	// sender has it) must take this group's files too: the owner gets
	// rwx until SetDirAttrs. Not ours to change: the writes will say.
	if fi, err := d.lstatDir(rel); err == nil && fi.Mode().Perm()&0o700 != 0o700 {
		d.root.Chmod(rel, fi.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky)|0o700)
	}
	return nil
}

// lstatDir returns the entry rel, itself (not what a link leads to), if
// it is a directory.
func (d *Dir) lstatDir(rel string) (fs.FileInfo, error) {
	fi, err := d.root.Lstat(rel)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("filestore: %s is not a directory", rel)
	}
	return fi, nil
}

// SetDirAttrs gives a received directory its permissions (if havePerm)
// and modification time (if not zero), as the sender has them
// (kermit.DirAttrReceiver). It changes only a directory inside the tree
// and not the tree's top or the current directory's own name (".");
// a symbolic link is refused, not followed.
func (d *Dir) SetDirAttrs(name string, perm fs.FileMode, havePerm bool, mtime time.Time) error {
	if d.Flat {
		return nil
	}
	if err := d.writable("set attributes of"); err != nil {
		return err
	}
	if path.Clean(strings.ReplaceAll(name, "\\", "/")) == "." {
		return nil
	}
	rel, err := d.resolve(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return nil
	}
	fi, err := d.lstatDir(rel)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() && os.Geteuid() != 0 {
		// Someone else's directory (a shared one the files went into):
		// its mode and time are its owner's business, and not a failure
		// of the transfer.
		return nil
	}
	// Through the parent's handle, not following a link: a directory
	// swapped for a link since the Lstat keeps the link's target
	// untouched.
	parent, base := splitRel(rel)
	h, err := d.openDir(parent, false)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	defer d.putDir(h)
	if havePerm {
		// The receiver's own setgid and sticky bits stay: a shared
		// group directory, a sticky incoming/. The sender's sticky bit
		// comes too (rsync -a keeps it); its setgid does not travel.
		mode := perm&(fs.ModePerm|fs.ModeSticky) | fi.Mode()&(fs.ModeSetgid|fs.ModeSticky)
		if err := h.chmodDir(d, base, mode); err != nil {
			return fmt.Errorf("filestore: %w", err)
		}
	}
	if !mtime.IsZero() {
		if err := h.chtimes(d, base, mtime); err != nil {
			return fmt.Errorf("filestore: %w", err)
		}
	}
	return nil
}

// chmodDir sets the mode of the directory name in this directory, not
// following a link (fchmodat2, Linux 6.6). On an older kernel, which
// cannot chmod without following, it chmods name if it is still a
// directory (a link swapped in between the two calls is the window
// left, inside the tree).
func (h *dirHandle) chmodDir(d *Dir, name string, mode fs.FileMode) error {
	if err := plainName(name); err != nil {
		return err
	}
	m := uint32(mode.Perm())
	if mode&fs.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if mode&fs.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return h.atDir(d, func(dirfd int) error {
		err := unix.Fchmodat(dirfd, name, m, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EOPNOTSUPP {
			var st unix.Stat_t
			if err = unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
				if st.Mode&unix.S_IFMT != unix.S_IFDIR {
					err = unix.ENOTDIR
				} else {
					err = unix.Fchmodat(dirfd, name, m, 0)
				}
			}
		}
		if err != nil {
			return &fs.PathError{Op: "fchmodat", Path: path.Join(h.rel, name), Err: err}
		}
		return nil
	})
}

// Mkdir creates a directory (and its parents).
func (d *Dir) Mkdir(name string) error {
	_, err := d.mkdirAll(name, 0o755)
	return err
}

// mkdirAll makes the directory name (and its parents) with mode, if the
// Dir may write, and returns its path in the tree.
func (d *Dir) mkdirAll(name string, mode fs.FileMode) (string, error) {
	if err := d.writable("mkdir"); err != nil {
		return "", err
	}
	rel, err := d.resolve(name)
	if err != nil {
		return "", err
	}
	// Checked and made at once: a file of the transfer may begin under
	// this name meanwhile (another session's).
	if err := d.names().free(rel, func() error { return d.root.MkdirAll(rel, mode) }); err != nil {
		return "", d.inTheWay(rel, err)
	}
	d.noteMade(rel)
	d.madeDirs(rel)
	return rel, nil
}

// inTheWay is err, MkdirAll's failure to make rel, naming the entry in
// the way where that is one: its "mkdirat x: file exists" names no
// culprit (QA: a tree's file under a name a file held said so, its
// directory said "exists and is not a directory").
func (d *Dir) inTheWay(rel string, err error) error {
	if errors.Is(err, fs.ErrExist) || errors.Is(err, unix.ENOTDIR) {
		for p := rel; p != "." && p != "/"; p = path.Dir(p) {
			if fi, serr := d.root.Lstat(p); serr == nil && !fi.IsDir() {
				return fmt.Errorf("filestore: %s exists and is not a directory", p)
			}
		}
	}
	return err
}

// dirSynced is told each directory syncMadeIn synced (tests).
var dirSynced = func(rel string) {}

// madeDirs notes that rel and its parents may have just been made: the
// directories holding them are synced at the next flush.
func (d *Dir) madeDirs(rel string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.madeIn == nil {
		d.madeIn = map[string]bool{}
	}
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		d.madeIn[path.Dir(p)] = true
	}
}

// syncMadeIn syncs the directories made in since the last time, each
// once, but those in done (synced already).
func (d *Dir) syncMadeIn(done map[string]bool) []error {
	d.mu.Lock()
	dirs := d.madeIn
	d.madeIn = nil
	d.mu.Unlock()
	var errs []error
	for rel := range dirs {
		if done[rel] {
			continue
		}
		f, err := d.root.Open(rel)
		if err == nil {
			err = f.Sync()
			f.Close()
		}
		if err == nil {
			dirSynced(rel)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("filestore: syncing directory %s: %w", rel, err))
		}
	}
	return errs
}

// Rmdir removes an empty directory.
func (d *Dir) Rmdir(name string) error {
	if err := d.writable("rmdir"); err != nil {
		return err
	}
	if b := path.Base(strings.TrimRight(name, "/")); b == "." || b == ".." {
		// As rmdir(1): "d/." is not d (QA: it removed d).
		return fmt.Errorf("filestore: %s: cannot remove a directory named by . or ..", name)
	}
	rel, err := d.resolveToRemove(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("filestore: cannot remove the top directory")
	}
	// Remove takes files too: an rmdir of a mistyped name must not.
	if _, err := d.lstatDir(rel); err != nil {
		return err
	}
	defer d.forgetDirs(rel)
	return d.root.Remove(rel)
}

// Rename renames a file or directory.
func (d *Dir) Rename(from, to string) error {
	if err := d.writable("rename"); err != nil {
		return err
	}
	a, err := d.resolve(from)
	if err != nil {
		return err
	}
	b, err := d.resolve(to)
	if err != nil {
		return err
	}
	afi, err := d.root.Lstat(a)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	if strings.HasSuffix(from, "/") && from != "/" && !afi.IsDir() {
		// "f/" names a directory, as for mv(1) and for rm: never the
		// file f (QA: it was renamed).
		return fmt.Errorf("filestore: cannot move %s: not a directory", from)
	}
	fi, err := d.root.Lstat(b)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// A link to a directory is the directory, as for mv(1): what
		// moves goes into it (QA: the link was replaced), within the
		// tree; one leading out refuses the move.
		switch st, serr := d.root.Stat(b); {
		case serr == nil && st.IsDir():
			fi = st
		case serr != nil && !errors.Is(serr, fs.ErrNotExist):
			return fmt.Errorf("filestore: cannot move %s to %s: %w", from, to, serr)
		}
	}
	if err == nil && fi.IsDir() && a != b {
		// Into an existing directory, as mv does.
		b = path.Join(b, path.Base(a))
	} else if strings.HasSuffix(to, "/") && !afi.IsDir() {
		// "to/" names a directory, as for mv(1): a file is not renamed
		// to a mistyped one.
		return fmt.Errorf("filestore: cannot move %s to %s: not a directory", from, to)
	}
	switch {
	case a == "." || b == ".":
		return fmt.Errorf("filestore: cannot rename the current directory")
	case a == b:
		return fmt.Errorf("filestore: %s: it is already there", a)
	case strings.HasPrefix(b, a+"/"):
		return fmt.Errorf("filestore: cannot move %s into itself (%s)", a, b)
	}
	defer d.forgetDirs(a)
	defer d.forgetDirs(b)
	err = d.root.Rename(a, b)
	bfi, berr := d.root.Lstat(b)
	switch {
	case err == nil:
		return nil
	case berr == nil && bfi.IsDir() && afi.IsDir():
		// rename(2) puts a directory in place of an empty one, where
		// os.Root refuses any directory there: renameat itself, on the
		// two parents' handles (opened within the tree; the last
		// elements are plain names, so nothing leads out).
		err = d.renameAt(a, b)
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("filestore: cannot rename %s to %s: a directory that is not empty is there", a, b)
		}
		return err
	case berr == nil && bfi.IsDir():
		return fmt.Errorf("filestore: cannot rename %s to %s: a directory is there", a, b)
	case berr == nil && afi.IsDir():
		return fmt.Errorf("filestore: cannot rename directory %s to %s: a file is there", a, b)
	}
	return err
}

// renameAt renames a to b (both relative to the top) with renameat(2)
// between their parents' handles.
func (d *Dir) renameAt(a, b string) error {
	da, ba := splitRel(a)
	db, bb := splitRel(b)
	if err := plainName(ba); err != nil {
		return err
	}
	if err := plainName(bb); err != nil {
		return err
	}
	ha, err := d.openDir(da, false)
	if err != nil {
		return err
	}
	defer d.putDir(ha)
	hb, err := d.openDir(db, false)
	if err != nil {
		return err
	}
	defer d.putDir(hb)
	return ha.atDir(d, func(fa int) error {
		return hb.atDir(d, func(fb int) error {
			if err := unix.Renameat(fa, ba, fb, bb); err != nil {
				return &os.LinkError{Op: "renameat", Old: a, New: b, Err: err}
			}
			return nil
		})
	})
}

// forgetDirs drops the cached handles of directory rel and of every
// directory under it: after a rename or removal their names lead
// elsewhere, or nowhere.
func (d *Dir) forgetDirs(rel string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, h := range d.dirs {
		if k == rel || strings.HasPrefix(k, rel+"/") {
			d.evictLocked(h)
		}
	}
}

// revalidateDirs drops the cached handles whose name no longer leads to
// their directory (renamed, removed or replaced since, by another
// session or from outside), so that no received group starts on one.
// Within a group a handle is trusted. (A GET needs none of this: it
// checks every file it opens against its match, openFile.)
func (d *Dir) revalidateDirs() {
	d.mu.Lock()
	hs := make([]*dirHandle, 0, len(d.dirs))
	for _, h := range d.dirs {
		hs = append(hs, h)
	}
	d.mu.Unlock()
	for _, h := range hs {
		now, err := d.root.Stat(h.rel)
		var was fs.FileInfo
		if err == nil {
			var f *os.File
			if f, err = h.dir(d); err == nil {
				was, err = f.Stat()
			}
		}
		if err != nil || !os.SameFile(now, was) {
			d.dropDir(h)
		}
		// Listed again for this batch: what others put there since is
		// seen (unnamed.go).
		h.lmu.Lock()
		h.listing, h.listState = nil, listNotYet
		h.lmu.Unlock()
	}
	if d.UnnamedMax > 0 {
		// Every listing starts again: the budget too. (Handles evicted
		// since are gone with theirs.)
		d.listedNames.Store(0)
	}
}

// OpenLocal opens a local file for reading, as os.Open does but as a
// bare descriptor (LocalFile): no attempt to register a regular file
// with the network poller (a failing epoll_ctl and three fcntl per
// file), and no os.File (its fcntl, cleanup and allocations), which
// show when a client sends thousands of small files.
//
// Only a regular file opens: one swapped for a named pipe since it was
// listed would block the open for ever (O_NONBLOCK, harmless on a
// regular file, keeps it from that), and a directory would read as
// garbage.
func OpenLocal(name string) (*LocalFile, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f := &LocalFile{fd: fd, name: name}
	if err := regularStat(fd, &f.opened); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f, nil
}

// errNotRegular is what opening a file for reading finds in its place
// when it is not a regular file.
type errNotRegular struct{ kind string }

func (e errNotRegular) Error() string { return "no longer a regular file (now " + e.kind + ")" }

// mustBeRegular fails unless fd is a regular file.
func mustBeRegular(fd int) error {
	var st unix.Stat_t
	return regularStat(fd, &st)
}

// regularStat is mustBeRegular, keeping the fstat in st.
func regularStat(fd int, st *unix.Stat_t) error {
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, st) }); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errNotRegular{EntryKind(statInfo{st: *st}.Mode())}
	}
	return nil
}

// LocalFile is a local file open for reading (OpenLocal). Its methods
// may be called concurrently (the data path re-reads blocks for resend
// requests); once it is closed they fail, as an os.File's do, and never
// reach a descriptor that another open has reused since.
type LocalFile struct {
	mu     sync.RWMutex // held shared by every use of fd, exclusive by Close
	fd     int
	name   string
	file   *os.File // made on the first File call; then it owns fd
	closed bool
	opened unix.Stat_t // the fstat OpenLocal checked it with (OpenedStat)
}

func (f *LocalFile) pathErr(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

// use holds the descriptor open for one call, or says it is closed.
func (f *LocalFile) use(op string) (release func(), err error) {
	f.mu.RLock()
	if f.closed {
		f.mu.RUnlock()
		return nil, f.pathErr(op, os.ErrClosed)
	}
	return f.mu.RUnlock, nil
}

// Read reads from the file's offset, as os.File.Read does.
func (f *LocalFile) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	release, err := f.use("read")
	if err != nil {
		return 0, err
	}
	defer release()
	var n int
	err = ignoringEINTR(func() error {
		var err error
		n, err = unix.Read(f.fd, b)
		return err
	})
	if err != nil {
		return max(n, 0), f.pathErr("read", err)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// ReadAt reads len(b) bytes at off, as os.File.ReadAt does: less only
// with an error, io.EOF at the file's end.
func (f *LocalFile) ReadAt(b []byte, off int64) (int, error) {
	release, err := f.use("read")
	if err != nil {
		return 0, err
	}
	defer release()
	total := 0
	for len(b) > 0 {
		var n int
		err := ignoringEINTR(func() error {
			var err error
			n, err = unix.Pread(f.fd, b, off)
			return err
		})
		if err != nil {
			return total, f.pathErr("read", err)
		}
		if n == 0 {
			return total, io.EOF
		}
		total += n
		b, off = b[n:], off+int64(n)
	}
	return total, nil
}

// Seek sets the offset of the next Read.
func (f *LocalFile) Seek(off int64, whence int) (int64, error) {
	release, err := f.use("seek")
	if err != nil {
		return 0, err
	}
	defer release()
	pos, err := unix.Seek(f.fd, off, whence)
	if err != nil {
		return 0, f.pathErr("seek", err)
	}
	return pos, nil
}

// Stat describes the open file (the engine checks that it did not
// change while it was sent).
func (f *LocalFile) Stat() (fs.FileInfo, error) {
	release, err := f.use("stat")
	if err != nil {
		return nil, err
	}
	defer release()
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(f.fd, &st) }); err != nil {
		return nil, f.pathErr("stat", err)
	}
	return statInfo{name: path.Base(f.name), st: st}, nil
}

// OpenedStat returns the file's status as it was opened (OpenLocal's
// own fstat, which found it regular), without asking again: a sender
// compares it with the listing right after the open, one system call a
// file fewer (many small files are a few calls each). Stat asks afresh.
func (f *LocalFile) OpenedStat() fs.FileInfo {
	return statInfo{name: path.Base(f.name), st: f.opened}
}

// File returns the file as an *os.File, for sendfile(2)
// (datachan.FileSource); from then on Close closes that.
func (f *LocalFile) File() *os.File {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.file == nil && !f.closed {
		f.file = os.NewFile(uintptr(f.fd), f.name)
	}
	return f.file
}

// Close closes the file once.
func (f *LocalFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return f.pathErr("close", os.ErrClosed)
	}
	f.closed = true
	if f.file != nil {
		return f.file.Close()
	}
	if err := unix.Close(f.fd); err != nil {
		return f.pathErr("close", err)
	}
	return nil
}

// statInfo is an fs.FileInfo from fstat.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string { return s.name }
func (s statInfo) Size() int64  { return s.st.Size }
func (s statInfo) ModTime() time.Time {
	return time.Unix(s.st.Mtim.Unix())
}
func (s statInfo) IsDir() bool { return s.Mode().IsDir() }

// ChangeTime is the file's ctime (kermit.ChangeTimeOf).
func (s statInfo) ChangeTime() time.Time { return time.Unix(s.st.Ctim.Unix()) }
func (s statInfo) Sys() any              { return &s.st }

// Status is the file's links, mode and owner (kermit.StatusOf).
func (s statInfo) Status() kermit.FileStatus {
	return kermit.FileStatus{Dev: uint64(s.st.Dev), Ino: s.st.Ino, Links: uint64(s.st.Nlink), Mode: uint32(s.st.Mode), UID: s.st.Uid, GID: s.st.Gid, Known: true}
}

// Links is the file's link count: 0 once it has been removed while open.
func (s statInfo) Links() uint64 { return uint64(s.st.Nlink) }
func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
