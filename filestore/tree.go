// Server commands that change the tree: CWD, DELETE, MKDIR, RMDIR,
// RENAME, and removing files sent.

package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"kerf/kermit"
)

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
	if rel != "." {
		// Entered only if it can be searched: one of mode 0600 (read,
		// not searched) was entered, and what came next failed naming
		// "." (QA r: "openat .: permission denied").
		if _, err := d.root.Stat(rel + "/."); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return fmt.Errorf("filestore: %s: %w", rel, err)
		}
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
func (d *Dir) Remove(name string) error { return d.RemoveEach(name, false, nil) }

// RemoveLiteral deletes the file name names as it is, never taking it
// for a pattern (kermit.LiteralFS): a client's escaped name, whose
// absence must not delete the files it would match.
func (d *Dir) RemoveLiteral(name string) error { return d.RemoveEach(name, true, nil) }

// RemoveNamed is Remove (RemoveLiteral if literal) that returns the
// first max files it removed, by their names from the root, and how
// many (kermit.RemoveNamer).
func (d *Dir) RemoveNamed(name string, literal bool, max int) ([]string, int, error) {
	var names []string
	n := 0
	err := d.RemoveEach(name, literal, func(rel string) {
		if n++; len(names) < max {
			names = append(names, rel)
		}
	})
	return names, n, err
}

// RemoveEach is Remove (RemoveLiteral if literal) that tells removed,
// if not nil, the name from the root of each file it removed: a
// pattern's files one by one, for a log that names what went.
func (d *Dir) RemoveEach(name string, literal bool, removed func(rel string)) error {
	if removed == nil {
		removed = func(string) {}
	}
	if err := d.writable("delete"); err != nil {
		return err
	}
	if strings.HasSuffix(name, "/") && name != "/" {
		// "f/" names a directory, as for rm(1): never the file f.
		return fmt.Errorf("filestore: %s: not a file (a name ending in / is a directory)", name)
	}
	if namesDirectory(name) {
		// So do "f/." and "f/..", as GET takes them (the file f was
		// deleted, where GET of "f/." says it is not a directory).
		return fmt.Errorf("filestore: %s: not a file (a name ending in /. or /.. is a directory)", name)
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
		return d.removeMatching(rel, removed)
	}
	if lerr == nil && fi.IsDir() {
		return fmt.Errorf("filestore: %s is a directory", rel)
	}
	if err := d.root.Remove(rel); err != nil {
		return err
	}
	removed(rel)
	return nil
}

// removeMatching deletes every regular file of its directory that the
// pattern rel's last element matches (REMOTE DELETE *.bin, as C-Kermit's
// server takes it). A file it may not delete does not stop the rest, as
// with rm(1); the error then says how many went and names those that
// did not (QA: the first refusal ended it, unsaid what was deleted).
func (d *Dir) removeMatching(rel string, removed func(rel string)) error {
	const most = 8 // named in the error: an E packet's worth
	n, deleted, unnamed, others := 0, 0, 0, 0
	var failed []string
	fail := func(m specName, err error) {
		if len(failed) == most {
			unnamed++
			return
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the name is said already
		}
		failed = append(failed, fmt.Sprintf("%s (%v)", path.Base(m.rel), err))
	}
	// One match at a time, as its directory's names are (QA w: rm of
	// 500,000 files by a pattern held them all, 329 MB).
	var merr error
	err := d.eachMatch(rel, false, func(m specName) bool {
		if m.err != nil {
			// A match that cannot be looked at (its directory may be
			// read, not searched): nothing there can be deleted.
			merr = m.err
			return false
		}
		if !m.fi.Mode().IsRegular() {
			others++
			return true
		}
		n++
		err := d.root.Remove(m.rel)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fail(m, err)
			return true
		}
		if err == nil {
			removed(m.rel) // not one gone before: another's doing
		}
		deleted++
		return true
	})
	if err == nil {
		err = merr
	}
	switch {
	case err != nil && deleted > 0:
		return fmt.Errorf("filestore: %s: deleted %d matching files, then: %w", rel, deleted, err)
	case err != nil:
		return err
	case n == 0 && others > 0:
		// (QA x: "no files match" of links a name deletes.)
		return fmt.Errorf("filestore: %s: matches no regular file, only %d other entries (links, directories, special files), which a pattern does not delete: name each", rel, others)
	case n == 0:
		return fmt.Errorf("filestore: %s: no files match", rel)
	case len(failed) > 0:
		more := ""
		if unnamed > 0 {
			more = fmt.Sprintf(" and %d more", unnamed)
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
	rel, err := cleanName(f.Path, naming)
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
	// A link to it, sent after, is told from a file gone by itself.
	d.Moved.Note(kermit.StatusOf(fi), fi.Size(), fi.ModTime(), kermit.ChangeTimeOf(fi), f.Name, filepath.Join(d.root.Name(), filepath.FromSlash(rel)))
	return nil
}

// linkGone is why the link rel, whose target is gone (err), is
// passed over: it led to a file moved already (Moved); or
// err, said as the filestore's.
func (d *Dir) linkGone(rel string, err error) error {
	if to, rerr := d.root.Readlink(rel); rerr == nil && errors.Is(err, fs.ErrNotExist) {
		at, ok := path.Join(path.Dir(rel), to), true
		if path.IsAbs(to) {
			at, ok = d.underTop(to) // an absolute link into the tree (linkTarget)
		}
		if moved := d.Moved.From(filepath.Join(d.root.Name(), filepath.FromSlash(at))); ok && moved != nil {
			return moved
		}
	}
	return fmt.Errorf("filestore: %w", err)
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
			if !modeRefused(err) {
				return fmt.Errorf("filestore: %w", err)
			}
			d.noteModeNotKept(err)
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
		err := fchmodat(dirfd, name, m, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EOPNOTSUPP {
			var st unix.Stat_t
			if err = unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
				if st.Mode&unix.S_IFMT != unix.S_IFDIR {
					err = unix.ENOTDIR
				} else {
					err = fchmodat(dirfd, name, m, 0)
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
		return "", fmt.Errorf("filestore: %w", d.inTheWay(rel, err))
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
				return fmt.Errorf("%s exists and is not a directory", p)
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
	a, err := d.resolveAs(from, renamingFrom)
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
