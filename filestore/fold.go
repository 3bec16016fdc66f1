package filestore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"unicode"

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
	// underWay holds, per folding directory as entries, the names of
	// files created and not yet named or ended (reserve).
	underWay map[string]map[string]underWay
}

// foldEntry is a name in a folding directory, and whether this transfer
// gave it.
type foldEntry struct {
	name  string
	ours  bool
	final string // ours: the path the transfer gave it (Photos/a and photos/a are one entry)
}

// foldKey is a name's form in a directory that folds case: each rune
// the least of its simple case-folding orbit (σ, ς and Σ one, as exFAT's
// upcase table has them; ſ, s and S one). Wider than vfat's ASCII
// folding, so a pair only vfat tells apart is refused, never stored
// over one another; strings.EqualFold (foldPending) agrees with it.
func foldKey(name string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, name)
}

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
	h.eachName(d, func(name string) error { // (what cannot be read is not kept)
		m[foldKey(name)] = foldEntry{name: name}
		return nil
	})
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
	return f.probeLocked(d, h, dir)
}

// probeLocked probes dir through h and records what it found; a probe
// that fails records nothing, and dir is asked again at its next file.
// f.mu held.
func (f *FoldSet) probeLocked(d *Dir, h *dirHandle, dir string) bool {
	folds, err := h.foldsCase(d)
	if err != nil {
		return false
	}
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
// probe that fails says nothing, and is not kept as an answer.
func (h *dirHandle) foldsCase(d *Dir) (folds bool, err error) {
	var tag [6]byte
	rand.Read(tag[:])
	probe := TempName("kerf-case-probe~" + hex.EncodeToString(tag[:]))
	err = h.atDir(d, func(dirfd int) error {
		var fd int
		err := ignoringEINTR(func() error {
			var err error
			fd, err = unix.Openat(dirfd, probe, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
			return err
		})
		if err != nil {
			return err
		}
		unix.Close(fd)
		// Removed whatever the lookup says (an interrupted unlink is
		// tried again: a probe left would stay for good).
		defer ignoringEINTR(func() error { return unix.Unlinkat(dirfd, probe, 0) })
		var st unix.Stat_t
		err = ignoringEINTR(func() error {
			return unix.Fstatat(dirfd, strings.ToUpper(probe), &st, unix.AT_SYMLINK_NOFOLLOW)
		})
		switch {
		case err == nil:
			folds = true
		case errors.Is(err, unix.ENOENT):
		default:
			return err
		}
		return nil
	})
	return folds, err
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
	if !probed && !f.probeLocked(in.d, in.h, in.dir) {
		return nameIt()
	}
	f.madeSinceLocked(in.d, in.h, in.dir, in.base)
	if err := f.clashLocked(in.dir, in.base, in.final); err != nil {
		return err
	}
	if err := nameIt(); err != nil {
		return err
	}
	if in.foldHeld {
		in.foldHeld = false
		f.releaseLocked(in.dir, in.base)
	}
	if entries := f.entries[foldKey(in.dir)]; entries != nil {
		entries[foldKey(in.base)] = foldEntry{name: in.base, ours: true, final: in.final}
	}
	return nil
}

// clashLocked refuses base in dir (final, as named to the user) where a
// name of its form, another, is an entry there, or under way in this
// transfer under another name; f.mu held.
func (f *FoldSet) clashLocked(dir, base, final string) error {
	dk, key := foldKey(dir), foldKey(base)
	how, other := "", ""
	if e, ok := f.entries[dk][key]; ok && e.ours && e.final != final {
		how, other = "received in this transfer", e.final
	} else if ok && !e.ours && e.name != base {
		how, other = "there before", path.Join(dir, e.name)
	} else if u, ok := f.underWay[dk][key]; ok && u.final != final {
		how, other = "being received in this transfer", u.final
	}
	if how == "" {
		return nil
	}
	return fmt.Errorf("filestore: %s: not stored: this file system does not tell it from %s, %s (their names differ only in case); not replaced", final, other, how)
}

// madeSinceLocked reads the folding directory dir again where an entry
// of base's form is on the disk and not in the set: made since the set
// read it, by another session (a send --sessions N whose twins went to
// two sessions, each with its set; review 53 M3) or another program.
// Found, it is a name there before, which clashLocked then refuses if
// it is not base itself. One lstat a file, in folding directories
// only. h may be nil (opened here); f.mu held.
func (f *FoldSet) madeSinceLocked(d *Dir, h *dirHandle, dir, base string) {
	m := f.entries[foldKey(dir)]
	if m == nil {
		return
	}
	key := foldKey(base)
	if _, known := m[key]; known {
		return
	}
	if h == nil {
		var err error
		if h, err = d.openDir(dir, false); err != nil {
			return
		}
		defer d.putDir(h)
	}
	if _, err := h.lstat(d, base); err != nil {
		return // (a name that cannot be looked up is not one to keep)
	}
	h.eachName(d, func(name string) error {
		if k := foldKey(name); m[k] == (foldEntry{}) {
			m[k] = foldEntry{name: name}
		}
		return nil
	})
}

// twinsPartial refuses a partial opened in a folding directory that is
// not this file's but its case twin's, as the directory stores it: a
// file another session is receiving (whose FoldSet this one does not
// share: two sessions of a server), or an interrupted one left. On
// exfat-fuse each name has its own inode, so the other's lock does not
// keep this one out, and its bytes would go into the other's partial
// (review 53). Read only where an existing partial is opened there.
func (in *incoming) twinsPartial() error {
	key := foldKey(in.tmp)
	stored := ""
	in.h.eachName(in.d, func(name string) error {
		if foldKey(name) == key {
			stored = name
			return errStop
		}
		return nil
	})
	if stored == "" || stored == in.tmp {
		return nil
	}
	return fmt.Errorf("filestore: %s: not stored: this file system does not tell its partial from %s, of a file being received or left by an interrupted transfer (their names differ only in case)", in.final, path.Join(in.dir, stored))
}

// errStop ends a walk of names early.
var errStop = errors.New("stop")

// reserve holds base's form in dir, a folding directory, for a file
// (final, its path as the transfer names it)
// being received (Create, before its data: a twin is refused then, not
// after all of it came, and two sessions never open one partial under
// two names; review 53). release gives it back.
func (f *FoldSet) reserve(d *Dir, dir, base, final string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.madeSinceLocked(d, nil, dir, base)
	if err := f.clashLocked(dir, base, final); err != nil {
		return err
	}
	if f.underWay == nil {
		f.underWay = make(map[string]map[string]underWay)
	}
	dk, key := foldKey(dir), foldKey(base)
	if f.underWay[dk] == nil {
		f.underWay[dk] = make(map[string]underWay)
	}
	u := f.underWay[dk][key]
	f.underWay[dk][key] = underWay{final: final, n: u.n + 1}
	return nil
}

func (f *FoldSet) release(dir, base string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.releaseLocked(dir, base)
}

func (f *FoldSet) releaseLocked(dir, base string) {
	dk, key := foldKey(dir), foldKey(base)
	switch u := f.underWay[dk][key]; {
	case u.n > 1:
		f.underWay[dk][key] = underWay{final: u.final, n: u.n - 1}
	case u.n == 1:
		delete(f.underWay[dk], key)
	}
}

// underWay is a name being received in a folding directory, and how
// many files of it.
type underWay struct {
	final string
	n     int
}
