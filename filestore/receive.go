// Receiving a file: Create, its incoming file's writes, Commit and
// Abort, the names being received, and the batched flush.

package filestore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"kerf/framing"
	"kerf/internal/holes"
	"kerf/kermit"
)

// Create begins receiving a file.
func (d *Dir) Create(name string) (kermit.Incoming, error) {
	in, err := d.create(name)
	if errors.Is(err, unix.ENOSPC) {
		err = d.noInodes(err, name)
	}
	if (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL)) && strings.ContainsAny(path.Base(name), fatForbidden) &&
		d.atDirOf(name, fatLikeDir) {
		// The directory is there (made just now): the name is what the
		// file system refused (QA aj: exfat-fuse said "no such file or
		// directory" of a:b, which the sender has).
		err = fmt.Errorf("%w (this file system takes none of %s in a name, as FAT and exFAT do not)", err, fatForbidden)
	}
	return in, leadsOutside(err, name)
}

// atDirOf reports what is of the directory the file name would be in
// (its descriptor); false if it cannot be opened.
func (d *Dir) atDirOf(name string, is func(dirfd int) bool) bool {
	rel, err := d.resolve(name)
	if err != nil {
		return false
	}
	h, err := d.openDir(path.Dir(rel), false)
	if err != nil {
		return false
	}
	defer d.putDir(h)
	yes := false
	h.atDir(d, func(dirfd int) error { yes = is(dirfd); return nil })
	return yes
}

// fatForbidden are the characters FAT and exFAT refuse in names (besides
// control characters and /).
const fatForbidden = `:?*<>|"\`

// noInodes says so when a file could not be made for want of inodes,
// not of space (QA ad: "no space left on device" while df showed the
// disk nearly empty).
func (d *Dir) noInodes(err error, name string) error {
	none := d.atDirOf(name, func(dirfd int) bool {
		var st unix.Statfs_t
		return unix.Fstatfs(dirfd, &st) == nil && st.Files > 0 && st.Ffree == 0
	})
	if !none {
		return err
	}
	return fmt.Errorf("%w (the file system has no inodes left: room for no more files, whatever its free space)", err)
}

func (d *Dir) create(name string) (_ kermit.Incoming, err error) {
	if d.ReadOnly {
		return nil, fmt.Errorf("filestore: %s: read-only access", name)
	}
	if strings.HasSuffix(name, "/") {
		// A directory's name (only a kerf peer sends directories, and not
		// through Create): made into a file "dir" it would surprise.
		return nil, fmt.Errorf("filestore: %s: a file name cannot end in /", name)
	}
	if d.Flat {
		// Only "/" separates: a backslash is a character of a Unix name
		// (a\b from a server is not b, which may be another file
		// of the same get), and is refused below as unsafe to store.
		name = path.Base(name)
	}
	if path.Base(name) == "." {
		// A directory (".." is refused as leaving the tree, below):
		// refused now, not after its data came (QA: an F named "."
		// was acknowledged, and received unnamed).
		return nil, fmt.Errorf("filestore: %s: names a directory, not a file", name)
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
	held := false
	if d.dirFolds(dir) {
		// A directory that folds case: a twin of another name there
		// is refused now (FoldSet.reserve).
		if err := d.folds().reserve(d, dir, base, rel); err != nil {
			return nil, err
		}
		held = true
		defer func() {
			if err != nil {
				d.folds().release(dir, base)
			}
		}()
	}
	tmp := TempName(base)
	if key := dir + "/" + tmp; d.pendingN[key] || d.flushing != nil && d.flushing.names[key] ||
		held && (len(d.pendingN) > 0 || d.flushing != nil) && d.foldPending(key) {
		// The same name again in one batch: the earlier file must get
		// its final name before this one takes the temporary name. A
		// failure there is another file's, for EndBatch to report.
		d.flushPending()
	} else if d.pendingFileAbove(dir) {
		// A file of the batch is named as one of this one's
		// directories: given its name first, it is in the way of the
		// directory, and this file is refused now, not the batch's
		// rename of that file at its end (QA: a hostile server's
		// "a" then "a/x" failed the group).
		d.flushPending()
	}
	if d.UnnamedMax > 0 {
		// Where the directory, as listed, holds neither the name nor a
		// partial of it, the file is received unnamed (unnamed.go),
		// unless its size, once known (WillHold), says otherwise.
		if in, err := d.createUnnamed(rel, dir, base, tmp); err != nil {
			return nil, err
		} else if in != nil {
			in.foldHeld = held
			return in, nil
		}
	}
	h, f, fresh, err := d.openTempFile(rel, dir, base, tmp)
	if err != nil {
		return nil, err
	}
	in := &incoming{d: d, h: h, final: rel, dir: dir, base: base, tmp: tmp, f: f, sparse: d.Sparse}
	in.countWrites()
	if held && !fresh {
		if err := in.twinsPartial(); err != nil {
			// Closed, not aborted: an empty partial would be removed,
			// and it is the other's.
			in.f.close()
			in.release()
			return nil, err
		}
	}
	if err := d.beginName(rel); err != nil {
		in.prepared = fresh
		in.empty.Store(fresh)
		in.Abort(true) // a partial kept from before stays
		return nil, err
	}
	in.prepare(fresh)
	in.foldHeld = held
	return in, nil
}

// pendingFileAbove reports whether a file of the batch not yet renamed
// (or of the flush under way) will be named dir or one of its parents.
func (d *Dir) pendingFileAbove(dir string) bool {
	if len(d.pendingN) == 0 && d.flushing == nil {
		return false
	}
	for p := dir; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		pd, pb := splitRel(p)
		key := pd + "/" + TempName(pb)
		if d.pendingN[key] || d.flushing != nil && d.flushing.names[key] {
			return true
		}
	}
	return false
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
	if fresh && in.sparse {
		in.gap.reset(0)
	}
	if !fresh {
		// The record covers the file as it was kept; whatever this
		// session does to it, it is not on the file any more.
		in.recorded, in.hasRecorded, in.noRecords = in.f.takePrefix()
		in.keptPrefix, in.kept, in.hasKept = in.f.takeKept()
		// A leftover partial may hold data anywhere until it is
		// truncated: no write into it may be skipped before then.
		in.zeroFrom.Store(math.MaxInt64)
	}
}

// openTempFile opens (creating it if need be) the temporary file tmp of the
// file rel, named base in the directory dir, and locks it: the
// directory handle it returns is held for the file.
func (d *Dir) openTempFile(rel, dir, base, tmp string) (h *dirHandle, f *tempFile, fresh bool, err error) {
	var reopened, waiting, watched bool
	for renamed := 0; ; {
		if h, err = d.openDir(dir, true); err != nil {
			return nil, nil, false, err // (openDir's say filestore)
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
				if !waiting && d.Holder != nil {
					// Seen waiting by another's watch, until Create
					// returns: a holder that waits is at work, not
					// silent (waitForHolder).
					waiting = true
					waitingHolders.add(d.Holder, 1)
					defer waitingHolders.add(d.Holder, -1)
				}
				again := d.waitForHolder(holder, rel, !watched)
				watched = true
				if again {
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
	in.releasePromise() // asked again (a resume's rest): the new need; countWrites found the room
	r := in.room
	if r == nil {
		return nil // unknown: let the writes tell
	}
	free, held, ok := r.admit(n, func(st *unix.Statfs_t) error {
		return in.h.atDir(in.d, func(dirfd int) error { return unix.Fstatfs(dirfd, st) })
	})
	if !ok && held > 0 {
		return fmt.Errorf("filestore: %s needs %d bytes, %d are free beside the %d held for files being received now: %w", in.final, n, free, held, unix.ENOSPC)
	}
	if !ok {
		return fmt.Errorf("filestore: %s needs %d bytes, %d are free: %w", in.final, n, free, unix.ENOSPC)
	}
	in.promised.Store(n)
	return nil
}

// wrote counts n bytes written into the file against its file system's
// room: what was promised to it is written now.
func (in *incoming) wrote(n int64) {
	r := in.room
	if r == nil || n <= 0 {
		return
	}
	r.written.Add(n)
	for {
		p := in.promised.Load()
		if p <= 0 {
			return
		}
		d := min(p, n)
		if in.promised.CompareAndSwap(p, p-d) {
			r.promised.Add(-d)
			return
		}
	}
}

// countWrites has the file's writes counted against its file system's
// room from the start, promised (Room) or not: a file of unknown size,
// a text file or one without attributes is admitted without a promise,
// and what it takes is still not promised to others (review: such
// writes went uncounted until the next fstatfs). A sparse file's writes
// may take less than they count, so it has none.
func (in *incoming) countWrites() {
	if !in.sparse {
		in.room = in.h.fsRoom(in.d)
	}
}

// releasePromise gives back what was promised to the file and not
// written: it is done with (committed, aborted, or asked again).
func (in *incoming) releasePromise() {
	if in.room != nil {
		in.room.promised.Add(-in.promised.Swap(0))
	}
}

// incoming is a file being received as tmp in directory h, to be renamed
// base there.
type incoming struct {
	// foldHeld: the file holds its name's form in a directory that
	// folds case (FoldSet.reserve), until named or ended.
	foldHeld  bool
	d         *Dir
	h         *dirHandle // released by Commit or Abort
	final     string     // relative to the tree's top
	dir       string     // h's directory, relative to the tree's top
	base, tmp string     // names in h
	f         *tempFile
	unnamed   bool      // f is an unnamed file, linked under base once complete (unnamed.go)
	modTime   time.Time // set by Commit (retime)
	told      bool      // WillHold was called
	released  bool
	batched   bool // committed in a batch, not flushed yet
	// recorded is the gap-free length a receiver that stopped cleanly
	// recorded on this partial (user.kerf.prefix), taken off the file
	// when it was opened: trusted by Partial, void after a Truncate.
	recorded    int64
	hasRecorded bool
	// noRecords: the partial's file system keeps no user extended
	// attributes (exFAT, FAT), so no record can be on it, and it has no
	// holes either: PartialKept looks for its first run of zeros.
	noRecords bool
	// keptPrefix and kept are what the file holds when it has gaps: data
	// in [0, keptPrefix) and in the ranges kept (sorted, apart, past
	// keptPrefix), nothing trusted between them. Read from the partial's
	// record when it is opened (takeKept), given out by PartialKept,
	// replaced by KeepRanges; recorded on it again by Abort(true).
	keptPrefix int64
	kept       [][2]int64
	hasKept    bool
	keptGiven  []framing.KeptRange // what PartialKept gave out, checked again by Commit
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
	gap      gapFree // a sparse named partial's gap-free prefix
	// announced is the size WillHold was told (-1: none), which a
	// batch counts to time itself (Dir.flushBeforeLong).
	announced int64
	// carry is the tail of the last sparse write past its last page
	// boundary, at carryOff, held back so that a write that follows on
	// completes the page: classic Kermit's packets are 1-9 KB, and their
	// pages of zeros straddle the writes (QA p: a 131 KB image of 100
	// bytes of data stored whole). Written out before anything else.
	carryMu  sync.Mutex
	carry    []byte
	carryOff int64
	joined   []byte // carry and the write it joins

	// room is the file system's free space Room admitted the file
	// against, and promised what of it is not written yet.
	room     *fsRoom
	promised atomic.Int64
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
// batch whose flush failed, the files it did rename are safe. One the
// flush could not name is not, whatever is under its name (an older
// file it failed to replace); nor is any file of a flush that could not
// sync a directory: which names that left in doubt is not worked out,
// and the safe side is to say none is saved.
func (d *Dir) Saved(rel string) bool {
	d.notSavedMu.Lock()
	failed := d.notSaved[rel]
	d.notSavedMu.Unlock()
	if failed {
		return false
	}
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
			if modeRefused(err) {
				in.d.noteModeNotKept(err) // kept whole all the same (review 53)
				return nil
			}
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
	if in.sparse && off >= in.zeroFrom.Load() {
		return in.writeCarried(b, off)
	}
	if err := in.flushCarry(); err != nil {
		return 0, err
	}
	n, err := in.f.WriteAt(b, off)
	in.wrote(int64(n))
	if in.sparse && n > 0 {
		in.gap.received(off, off+int64(n), in.f.setPrefix)
	}
	return n, err
}

// SkipZerosAt takes n zero bytes at off as a hole when the receive is
// sparse and the file holds nothing there (datachan.ZeroSkipper: a
// block of zeros), as writeSparse would after looking at each byte;
// otherwise it says they are to be written.
func (in *incoming) SkipZerosAt(off, n int64) (bool, error) {
	if !in.sparse || off < in.zeroFrom.Load() || n <= 0 {
		return false, nil
	}
	if err := in.settle(); err != nil {
		return false, err
	}
	in.empty.Store(false)
	in.touched.Store(true)
	in.carryMu.Lock()
	defer in.carryMu.Unlock()
	// A carry is a part-page before a gap or these zeros: written, or a
	// hole of its own; these need nothing written at all.
	if err := in.flushCarryLocked(); err != nil {
		return false, err
	}
	end := off + n
	in.holeTo(end)
	in.gap.received(off, end, in.f.setPrefix)
	return true, nil
}

// holeTo notes that the file, left a hole, reaches at least to end:
// Commit gives it that length.
func (in *incoming) holeTo(end int64) {
	for {
		e := in.holeEnd.Load()
		if e >= end || in.holeEnd.CompareAndSwap(e, end) {
			return
		}
	}
}

// writeCarried is writeSparse of b at off joined to the carry before it,
// holding back the tail past the last page boundary as the new carry.
func (in *incoming) writeCarried(b []byte, off int64) (int, error) {
	in.carryMu.Lock()
	defer in.carryMu.Unlock()
	w, at := b, off
	if len(in.carry) > 0 {
		if in.carryOff+int64(len(in.carry)) == off {
			in.joined = append(append(in.joined[:0], in.carry...), b...)
			w, at = in.joined, in.carryOff
		} else if err := in.flushCarryLocked(); err != nil {
			return 0, err
		}
		in.carry = in.carry[:0]
	}
	keep := min(len(w), int((at+int64(len(w)))%sparseMin))
	if head := w[:len(w)-keep]; len(head) > 0 {
		if _, err := in.writeSparse(head, at); err != nil {
			return 0, err
		}
	}
	in.carry = append(in.carry[:0], w[len(w)-keep:]...)
	in.carryOff = at + int64(len(w)-keep)
	return len(b), nil
}

// flushCarry writes out the carry (writeCarried).
func (in *incoming) flushCarry() error {
	in.carryMu.Lock()
	defer in.carryMu.Unlock()
	return in.flushCarryLocked()
}

func (in *incoming) flushCarryLocked() error {
	if len(in.carry) == 0 {
		return nil
	}
	if end := in.carryOff + int64(len(in.carry)); allZero(in.carry) && in.holeEnd.Load() <= end {
		// Zeros to the end of what came: a hole too, as cp makes the
		// last part-page of zeros (if more follows, it is written over
		// what the file's length leaves as zeros).
		in.holeEnd.Store(end)
		in.gap.received(in.carryOff, end, in.f.setPrefix)
		in.carry = in.carry[:0]
		return nil
	}
	_, err := in.writeSparse(in.carry, in.carryOff)
	in.carry = in.carry[:0]
	return err
}

// writeSparse writes b at off, where the file is known to hold nothing,
// leaving out each page-aligned sparseMin bytes of zeros: a hole is left
// there. Page by page, not block by block, as cp --sparse=always does (QA:
// a 3 GiB image with 11 bytes of data took a MiB-block each, 3 MiB,
// where rsync took 12 KiB). The pages with data go in one write per run.
func (in *incoming) writeSparse(b []byte, off int64) (int, error) {
	end := off + int64(len(b))
	run := -1 // start in b of the data not written yet, -1 if none
	skipped := false
	for i := 0; i < len(b); {
		next := min(len(b), i+sparseMin-int((off+int64(i))%sparseMin))
		if next-i < sparseMin || !allZero(b[i:next]) {
			if run < 0 {
				run = i
			}
			i, skipped = next, false
			continue
		}
		if run >= 0 {
			if n, err := in.f.WriteAt(b[run:i], off+int64(run)); err != nil {
				return run + n, err
			}
			run = -1
		}
		i, skipped = next, true
	}
	if run >= 0 {
		if n, err := in.f.WriteAt(b[run:], off+int64(run)); err != nil {
			return run + n, err
		}
	}
	if skipped {
		in.holeTo(end) // the write ends in a hole
	}
	in.gap.received(off, end, in.f.setPrefix)
	return len(b), nil
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
	size, crc, _, err := in.PartialKept(0)
	return size, crc, err
}

// PartialKept is Partial that also gives, when the partial was kept
// with ranges past its prefix (KeepRanges), up to most of them with the
// CRC-32C of their bytes (kermit.KeptPartial): the file is cut after
// the last one given, and the sender need send only the gaps. With most
// 0 it is Partial.
func (in *incoming) PartialKept(most int) (int64, uint32, []framing.KeptRange, error) {
	if err := in.settle(); err != nil {
		return 0, 0, nil, err
	}
	if err := in.flushCarry(); err != nil {
		return 0, 0, nil, err
	}
	size, err := in.f.size()
	if err != nil {
		return 0, 0, nil, err
	}
	cut := in.f.firstHole(size)
	if in.hasRecorded && in.recorded <= size {
		// Recorded by a receiver that stopped cleanly, or as a sparse
		// receive went: everything up to the record was received, holes
		// included (a sparse receive's zeros). What lies past it without
		// a hole was written too.
		cut = max(cut, in.recorded)
	}
	var crc uint32
	scanned := false
	if cut == size && in.noRecords {
		// Killed outright on a file system without holes or records
		// (exFAT, FAT on a USB disk): a block that never arrived was
		// filled with zeros when a later one was written, so the file
		// is trusted up to its first aligned run of zeros in its last
		// gapWindow bytes, where blocks land out of order (QA ad: each
		// resume after a kill -9 sent the file again from 0, its gaps'
		// zeros failing the prefix's check). Zeros that are data there
		// cost sending again from them, a partial kept cleanly too: at
		// most gapWindow (review 55: over the whole file, a disk
		// image's first zeros decided).
		cut, crc, err = holes.DataPrefix(in.f, size, zeroRun, size-gapWindow)
		if err != nil {
			return 0, 0, nil, err
		}
		scanned = true
	}
	var ranges [][2]int64
	if in.hasKept && in.keptPrefix <= size {
		// Kept with gaps by a receiver that stopped cleanly: the prefix
		// is exact (what follows it is a gap, whether or not the file
		// system left a hole there), and so are the ranges.
		cut = in.keptPrefix
		for _, r := range in.kept {
			if len(ranges) == most || r[1] > size {
				break
			}
			ranges = append(ranges, r)
		}
	}
	in.kept, in.hasKept = nil, false
	in.prepared = true
	end := cut
	if len(ranges) > 0 {
		end = ranges[len(ranges)-1][1]
		in.keptPrefix, in.kept, in.hasKept = cut, ranges, true
	}
	if end < size {
		if err := in.f.truncate(end); err != nil {
			in.kept, in.hasKept = nil, false
			return 0, 0, nil, err
		}
		size = end
	}
	if in.sparse && !in.unnamed {
		in.gap.reset(cut)
		for _, r := range ranges {
			in.gap.received(r[0], r[1], func(int64) {})
		}
	}
	// Nothing lies beyond size now: a sparse receive may leave holes
	// there again. (A sparse partial left by a crash, with no recorded
	// prefix, is cut at its first hole, so a disk image resumes from
	// about its first run of zeros.) The gaps between kept ranges hold
	// what they hold, so a sparse receive makes them holes first, and
	// then leaves the zeros sent into them as holes too (QA aa: a
	// resumed 20 GiB image with 4 MB of data took 531 MiB); where it
	// cannot, their zeros are written.
	zeroFrom := size
	if in.sparse && len(ranges) > 0 && in.punchGaps(cut, ranges) == nil {
		zeroFrom = cut
	}
	in.zeroFrom.Store(zeroFrom)
	crcOf := func(off, end int64) (uint32, error) { return holes.CRC32C(in.f.fd, in.f, off, end) }
	if !scanned {
		if crc, err = crcOf(0, cut); err != nil {
			return 0, 0, nil, err
		}
	}
	var kept []framing.KeptRange
	for _, r := range ranges {
		c, err := crcOf(r[0], r[1])
		if err != nil {
			return 0, 0, nil, err
		}
		kept = append(kept, framing.KeptRange{Off: r[0], End: r[1], CRC: c})
	}
	in.keptGiven = kept
	return cut, crc, kept, nil
}

// punchGaps makes the gaps between prefix and the kept ranges holes.
func (in *incoming) punchGaps(prefix int64, ranges [][2]int64) error {
	from := prefix
	for _, r := range ranges {
		if r[0] > from {
			if err := in.f.punchHole(from, r[0]-from); err != nil {
				return err
			}
		}
		from = r[1]
	}
	return nil
}

// checkKept reads again the ranges PartialKept gave out: the sender did
// not send them, and the file's check trusted their CRCs as they were
// then, so a range changed on the disk since (another process writing
// into the partial) would otherwise be named as received.
func (in *incoming) checkKept() error {
	for _, k := range in.keptGiven {
		c, err := holes.CRC32C(in.f.fd, in.f, k.Off, k.End)
		if err != nil {
			return fmt.Errorf("filestore: reading again bytes %d-%d of %s, kept from before: %w", k.Off, k.End, in.final, err)
		}
		if c != k.CRC {
			return fmt.Errorf("filestore: bytes %d-%d of %s, kept from an earlier attempt, changed on the disk during this one; not stored", k.Off, k.End, in.final)
		}
	}
	return nil
}

// KeepRanges says, before Abort(true), that of what this session
// received only [0, prefix) and ranges (past prefix, sorted, apart) are
// on the file: it is cut after the last range (at most maxKeptRanges are
// kept), and Abort records them for PartialKept. The file's length
// after it is returned.
func (in *incoming) KeepRanges(prefix int64, ranges [][2]int64) (int64, error) {
	if len(ranges) > maxKeptRanges {
		ranges = ranges[:maxKeptRanges]
	}
	end := prefix
	if len(ranges) > 0 && !in.unnamed {
		end = ranges[len(ranges)-1][1]
	} else {
		ranges = nil
	}
	if err := in.Truncate(end); err != nil {
		return 0, err
	}
	in.keptPrefix, in.kept, in.hasKept = prefix, slices.Clone(ranges), len(ranges) > 0
	return end, nil
}

// cutKept drops what the kept ranges say of the file past size.
// Cut within the gap after the prefix, the file still has one: the
// record stays, with no range. The ranges given out are not checked
// again once cut: a cut is a new start.
func (in *incoming) cutKept(size int64) {
	if len(in.keptGiven) > 0 && in.keptGiven[len(in.keptGiven)-1].End > size {
		in.keptGiven = nil
	}
	if !in.hasKept {
		return
	}
	if size <= in.keptPrefix {
		in.kept, in.hasKept = nil, false
		return
	}
	n := 0
	for n < len(in.kept) && in.kept[n][0] < size {
		in.kept[n][1] = min(in.kept[n][1], size)
		n++
	}
	in.kept = in.kept[:n]
}

func (in *incoming) Truncate(size int64) error {
	if err := in.settle(); err != nil {
		return err
	}
	// What the cut leaves of the carry is written; what lies past it is
	// not (review: a write that failed there failed the cut, and the
	// whole partial went).
	in.carryMu.Lock()
	if end := in.carryOff + int64(len(in.carry)); end > size {
		in.carry = in.carry[:max(0, size-in.carryOff)]
	}
	err := in.flushCarryLocked()
	in.carryMu.Unlock()
	if err != nil {
		return err
	}
	in.prepared = true
	if in.hasRecorded && in.recorded > size {
		in.hasRecorded = false // the recorded range is cut
	}
	in.cutKept(size)
	if size == 0 && in.empty.Load() {
		return nil
	}
	if err := in.f.truncate(size); err != nil {
		// Not cut (a file system over its quota refuses even that, a
		// copy-on-write one needing room to change a file): what the
		// file holds is not known to be whole any more, and no record
		// may say so; kept as it is, a resume finds its prefix again
		// from its first hole (QA aj: the partial was removed).
		in.prepared, in.hasRecorded, in.kept, in.hasKept = false, false, nil, false
		return err
	}
	in.zeroFrom.Store(size) // nothing beyond it now
	if in.holeEnd.Load() > size {
		in.holeEnd.Store(size)
	}
	if in.sparse && !in.unnamed {
		in.gap.reset(size)
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
	in.releasePromise() // all written that will be
	if err := in.settle(); err != nil {
		return err
	}
	if err := in.flushCarry(); err != nil {
		return err
	}
	if err := in.checkKept(); err != nil {
		return err
	}
	// Whole and checked: if naming it fails now, Abort(true) keeps all
	// of it as received, not the ranges it began with (review 51).
	in.kept, in.hasKept, in.keptGiven = nil, false, nil
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
	if in.gap.recorded() {
		in.f.clearPrefix() // a record for a resume, not for the file
	}
	if err := in.f.chmod(perm); err != nil {
		if !modeRefused(err) {
			return err
		}
		in.d.noteModeNotKept(err)
	}
	if !modTime.IsZero() {
		// Through the descriptor: the name may be another file's by now.
		if err := in.f.chtimes(modTime); err != nil {
			return err
		}
		in.modTime = modTime
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
		if len(d.pending) == 1 {
			d.pendingSince, d.pendingBytes = time.Now(), 0
		}
		d.pendingBytes += max(in.announced, 0)
		switch n := batchedFiles.Add(1); {
		case n > batchBudget():
			// The process holds its share of descriptors in batches
			// already (many sessions at once): this batch gives its
			// back now, not at 256 files, so that no session's file
			// fails for "too many open files".
			d.flushPending()
		case len(d.pending) >= maxBatch, time.Since(d.pendingSince) >= maxBatchAge:
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
	in.retime()
	// The rename is durable only once its directory is synced.
	err := in.h.sync(d)
	in.release()
	return err
}

// retime sets the named file's time again, by its name, where its file
// system is FUSE: fusefat gives a file written through a descriptor the
// time of its close when it was renamed while open, as kerf names
// files, and every --resume then found it changed and sent it again.
// Elsewhere the time set on the descriptor stays, and this costs
// nothing. (Best effort: the file is saved either way.)
func (in *incoming) retime() {
	if !in.modTime.IsZero() && in.h.fuse(in.d) {
		in.h.chtimes(in.d, in.base, in.modTime)
	}
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

// endLocked notes a file under rel no longer being received; its name
// goes from underWay once none is (it stayed, at 0: the set of a get of
// 100,000 files by a wildcard held every name twice).
func (n *NameSet) endLocked(rel string) {
	switch c := n.underWay[rel]; {
	case c > 1:
		n.underWay[rel] = c - 1
	case c == 1:
		delete(n.underWay, rel)
	}
}

// maxBatch bounds the committed files (and their open descriptors) a
// batch holds before it flushes on its own.
const maxBatch = 256

// maxBatchAge bounds how long a batch's first file waits for its name
// while files keep coming (and a big file that begins flushes the batch
// before it: flushBeforeBig): what a crash of the receiver loses is at
// most about this much of the transfer. On a LAN 256 files take a
// fraction of it.
const maxBatchAge = time.Second

// bigForBatch is the size past which a file that begins flushes the
// batch before it (flushBeforeLong), whatever the pace: seconds to hours
// on a slow link, which the files before it would wait out for their
// names. (A LAN moves it in a few milliseconds; the flush goes on beside
// it.)
const bigForBatch = 8 << 20

// flushBeforeLong flushes, in the background, a batch that would
// otherwise wait for a file of size bytes (-1: not known) before its
// files got their names, when that wait would take the batch past
// maxBatchAge: a batch that old already, a big file (bigForBatch), or
// one that at the pace the batch's files came would take that long (a
// serial line: 8 MiB is 11 minutes at 115,200 bps; review).
func (d *Dir) flushBeforeLong(size int64) {
	if !d.batching || len(d.pending) == 0 {
		return
	}
	age := time.Since(d.pendingSince)
	if age >= maxBatchAge || size < 0 || size > bigForBatch ||
		d.pendingBytes > 0 && float64(size)*age.Seconds() >= float64(d.pendingBytes)*maxBatchAge.Seconds() {
		d.flushInBackground()
	}
}

// batchedFiles counts the committed files all Dirs' batches hold open,
// against batchBudget: with many sessions receiving at once (each batch
// up to maxBatch, and as many again being flushed) they would otherwise
// run the process out of descriptors (QA: 20 sessions under a limit of
// 1,024 failed 19 of 20 transfers with "too many open files").
var batchedFiles atomic.Int64

// batchBudget is a quarter of the process's descriptor limit (read once;
// Go raises the soft limit to the hard one at start), at least 8: the
// rest is for connections, directories and the files being moved. (A
// floor of 64 was the whole of a limit of 64: QA, 2,959 of 3,000 files
// "too many open files".)
var batchBudget = sync.OnceValue(func() int64 {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return 1 << 20
	}
	return max(int64(lim.Cur/4), 8)
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
	// The last batch's failures have been asked about (Saved) by now:
	// kept no longer, they cannot grow with a session's files.
	d.notSavedMu.Lock()
	d.notSaved = nil
	d.notSavedMu.Unlock()
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
		if errs[i] == nil {
			in.retime()
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
	dirErrs := len(errs) - len(files) // only failures are appended
	d.notSavedMu.Lock()
	for i, in := range files {
		// A directory not synced leaves every name of the flush in
		// doubt: none is said saved.
		if errs[i] != nil || dirErrs > 0 {
			if d.notSaved == nil {
				d.notSaved = map[string]bool{}
			}
			d.notSaved[in.final] = true
		} else {
			delete(d.notSaved, in.final)
		}
	}
	d.notSavedMu.Unlock()
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
	in.releasePromise()
	if in.batched {
		return nil // committed; the batch's flush owns the file now
	}
	if in.foldHeld {
		in.foldHeld = false
		in.d.folds().release(in.dir, in.base)
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
	if keep && in.f.tooBig.Load() {
		keep = false // no resume can finish it (tempFile.WriteAt)
	}
	if keep {
		// (A carry that cannot be written is not counted received:
		// the prefix kept ends before it.)
		in.flushCarry()
		size, err := in.f.size()
		if err == nil && in.hasKept && (in.prepared || !in.touched.Load()) {
			// Kept with gaps (KeepRanges, or a record of them given out
			// or left untouched): recorded as such, or, if that cannot
			// be, cut where its data stops being whole.
			if in.f.setKept(in.keptPrefix, in.kept) != nil {
				err = in.f.truncate(in.keptPrefix)
				size = in.keptPrefix
				if err == nil && size > 0 {
					in.f.setPrefix(size)
				}
			}
			if err == nil && size > 0 {
				return nil
			}
		} else if err == nil && size > 0 {
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
