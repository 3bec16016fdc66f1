package filestore

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// FoldSet guards a transfer against two of its files landing on one
// entry of a directory that does not tell upper from lower case (FAT,
// exFAT, a casefolded ext4 directory, SMB): A.txt then a.txt would
// otherwise replace the first, and both be reported saved (QA ad). Each
// directory a file goes into is probed once (foldsCase); only in a
// folding directory are the names kept, by their lower-case form, and
// a later file whose form is taken by another name is refused before
// it is named (and one whose temporary name is a pending file's, the
// same partial there, waits for that one to be named first). Nothing
// is kept for a directory that tells case apart, so a transfer into
// one costs a probe per directory and no memory per file. Safe for
// concurrent use; a nil FoldSet is the Dir's own (Dir.folds).
type FoldSet struct {
	mu sync.Mutex
	// folds says, per directory (as the transfer names it), whether it
	// folds case; absent: not probed yet.
	folds map[string]bool
	// names maps a folded name to the name stored under it, in folding
	// directories.
	names map[string]string
}

// foldKey is a name's form in a directory that folds case.
func foldKey(rel string) string { return strings.ToLower(rel) }

// dirFolds reports whether the directory dir folds case, probing it the
// first time it is asked (a directory not there yet is asked again
// later).
func (d *Dir) dirFolds(dir string) bool {
	f := d.folds()
	f.mu.Lock()
	folds, probed := f.folds[dir]
	f.mu.Unlock()
	if probed {
		return folds
	}
	h, err := d.openDir(dir, false)
	if err != nil {
		return false
	}
	folds = h.foldsCase(d)
	d.putDir(h)
	f.mu.Lock()
	if f.folds == nil {
		f.folds = make(map[string]bool)
	}
	f.folds[dir] = folds
	f.mu.Unlock()
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

func (d *Dir) folds() *FoldSet {
	d.foldOnce.Do(func() {
		if d.Folds == nil {
			d.Folds = &FoldSet{}
		}
	})
	return d.Folds
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
	key := foldKey(in.final)
	if other, ok := f.names[key]; folds && ok && other != in.final {
		return fmt.Errorf("filestore: %s: not stored: this file system does not tell it from %s, received in this transfer (their names differ only in case); not replaced", in.final, other)
	}
	if err := nameIt(); err != nil {
		return err
	}
	if !probed {
		folds = in.h.foldsCase(in.d)
		if f.folds == nil {
			f.folds = make(map[string]bool)
		}
		f.folds[in.dir] = folds
	}
	if folds {
		if f.names == nil {
			f.names = make(map[string]string)
		}
		if _, ok := f.names[key]; !ok {
			f.names[key] = in.final
		}
	}
	return nil
}
