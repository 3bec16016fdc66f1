package filestore

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// FoldSet guards against two names landing on one entry of a directory
// that does not tell upper from lower case (FAT, exFAT, a casefolded
// ext4 directory, SMB): A.txt then a.txt would otherwise replace the
// first, and both be reported saved (QA ad). Each directory a file goes
// into is probed once (foldsCase); a folding one has its entries read
// then, and kept by their lower-case form, with the names this transfer
// gives there: a file whose form is another name's, received in this
// transfer or there before (a --resume that passed it over as already
// there), is refused before it is named, not stored over it (and one
// whose temporary name is a pending file's, the same partial there,
// waits for that one to be named first). Nothing is kept for a
// directory that tells case apart, so a transfer into one costs a probe
// per directory and no memory per file. Safe for concurrent use; a nil
// FoldSet is the Dir's own (Dir.folds).
type FoldSet struct {
	mu sync.Mutex
	// folds says, per directory (as the transfer names it), whether it
	// folds case; absent: not probed yet.
	folds map[string]bool
	// entries holds, per folding directory (by its lower-case form:
	// Photos and photos are one there), its entries by their lower-case
	// form.
	entries map[string]map[string]foldEntry
}

// foldEntry is a name in a folding directory, and whether this transfer
// gave it.
type foldEntry struct {
	name string
	ours bool
}

// foldKey is a name's form in a directory that folds case.
func foldKey(name string) string { return strings.ToLower(name) }

func (d *Dir) folds() *FoldSet {
	d.foldOnce.Do(func() {
		if d.Folds == nil {
			d.Folds = &FoldSet{}
		}
	})
	return d.Folds
}

// learnLocked records what a probe of dir (through h) found; f.mu held.
func (f *FoldSet) learnLocked(d *Dir, h *dirHandle, dir string, folds bool) {
	if f.folds == nil {
		f.folds = make(map[string]bool)
	}
	f.folds[dir] = folds
	if !folds {
		return
	}
	if f.entries == nil {
		f.entries = make(map[string]map[string]foldEntry)
	}
	key := foldKey(dir)
	if f.entries[key] != nil {
		return // read through its other case
	}
	m := make(map[string]foldEntry)
	for _, name := range h.entryNames(d) {
		m[foldKey(name)] = foldEntry{name: name}
	}
	f.entries[key] = m
}

// dirFolds reports whether the directory dir folds case, probing it the
// first time it is asked (a directory not there yet is asked again
// later).
func (d *Dir) dirFolds(dir string) bool {
	f := d.folds()
	f.mu.Lock()
	defer f.mu.Unlock()
	if folds, probed := f.folds[dir]; probed {
		return folds
	}
	h, err := d.openDir(dir, false)
	if err != nil {
		return false
	}
	defer d.putDir(h)
	folds := h.foldsCase(d)
	f.learnLocked(d, h, dir, folds)
	return folds
}

// foldPending reports whether a file of the batch not yet named (or of
// the flush under way) has a temporary name of the same form as key's,
// in a directory that folds case: the same partial on the disk.
func (d *Dir) foldPending(key string) bool {
	for k := range d.pendingN {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	if d.flushing != nil {
		for k := range d.flushing.names {
			if strings.EqualFold(k, key) {
				return true
			}
		}
	}
	return false
}

// foldsCase reports whether this directory folds case: a probe file of
// its own, a partial's name in lower case, is made, looked up in upper
// case, and removed. (Comparing a name's inode with its case twin's
// does not do: exfat-fuse numbers each name it is asked for anew.) A
// directory where it cannot be made is taken to tell case apart.
func (h *dirHandle) foldsCase(d *Dir) bool {
	var tag [6]byte
	rand.Read(tag[:])
	probe := TempName("kerf-case-probe~" + hex.EncodeToString(tag[:]))
	folds := false
	h.atDir(d, func(dirfd int) error {
		fd, err := unix.Openat(dirfd, probe, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return err
		}
		unix.Close(fd)
		var st unix.Stat_t
		folds = unix.Fstatat(dirfd, strings.ToUpper(probe), &st, unix.AT_SYMLINK_NOFOLLOW) == nil
		return unix.Unlinkat(dirfd, probe, 0)
	})
	return folds
}

// entryNames reads the directory's entry names (none if it cannot).
func (h *dirHandle) entryNames(d *Dir) []string {
	var names []string
	h.atDir(d, func(dirfd int) error {
		// A descriptor of its own: reading moves the offset.
		fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		buf := make([]byte, 8192)
		for {
			n, err := unix.ReadDirent(fd, buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				return err
			}
			_, _, names = unix.ParseDirent(buf[:n], -1, names)
		}
	})
	return names
}

// nameFolding gives in its final name (nameIt) as FoldSet has it: in a
// directory not known to tell case apart, checked, named and recorded
// under the set's lock, so that two files named at once (a batch's
// flush names eight at a time) cannot both pass the check.
func (in *incoming) nameFolding(nameIt func() error) error {
	f := in.d.folds()
	f.mu.Lock()
	folds, probed := f.folds[in.dir]
	if probed && !folds {
		f.mu.Unlock()
		return nameIt()
	}
	defer f.mu.Unlock()
	if !probed {
		folds = in.h.foldsCase(in.d)
		f.learnLocked(in.d, in.h, in.dir, folds)
		if !folds {
			return nameIt()
		}
	}
	entries := f.entries[foldKey(in.dir)]
	key := foldKey(in.base)
	if e, ok := entries[key]; ok && e.name != in.base {
		how := "there before"
		if e.ours {
			how = "received in this transfer"
		}
		return fmt.Errorf("filestore: %s: not stored: this file system does not tell it from %s, %s (their names differ only in case); not replaced", in.final, path.Join(in.dir, e.name), how)
	}
	if err := nameIt(); err != nil {
		return err
	}
	if entries != nil {
		entries[key] = foldEntry{name: in.base, ours: true}
	}
	return nil
}
