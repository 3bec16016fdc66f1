package filestore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// A small file is received, where it can be, as an unnamed file
// (O_TMPFILE) that its Commit links under the final name: nobody else
// can open it meanwhile, so it needs no lock, no check that its
// temporary name is still its own (twice) and no rename: 7 system calls
// a file instead of 12, a good part of a small file's cost where a
// system call is dear (docs/benchmarks.md, "Twenty-fourth session").
// What it gives up is the partial an interrupted file leaves for a
// resume (Abort). Hence only files announced at most
// Dir.UnnamedMax bytes and not to be resumed (WillHold), and only where the
// directory holds neither the name nor a partial of it (a partial is
// resumed, or reused, the temporary name's way).
//
// The listing that says so is read once per directory handle and
// batch, and kept up to date with what this Dir does; what others do
// meanwhile it does not see, and need not: the link never replaces
// anything (EEXIST), and a name found taken then is met as a rename
// would meet it (linkUnnamed). Two sessions receiving one name at once
// both succeed, the later replacing the earlier, where temporary names
// make the second wait (ErrBusy): each file is whole either way.

const (
	listNotYet int8 = iota
	listDone
	listUnknown // too many entries to keep, or unreadable
)

// NetUnnamedMax is Dir.UnnamedMax for a receiver on a network: a file
// of at most 256 KiB that a crash cuts off costs a fraction of a second
// to send again on any path kerf's data connections are for.
const NetUnnamedMax = 256 << 10

// listMax bounds the entries a directory handle keeps: a directory
// holding more is not listed, and its files take the temporary name.
// listBudget bounds the names all of a Dir's listings hold at once (a
// batch may hold hundreds of directories); past it, directories are not
// listed until the next batch. A name is kept as a 64-bit hash, about
// 20 bytes with the map's own: at most about 1.3 MB a Dir (a session).
// A collision only makes a file take the temporary name.
const (
	listMax    = 4096
	listBudget = 65536
)

// listSeed seeds nameHash.
var listSeed = maphash.MakeSeed()

// nameHash is what a listing keeps of name.
func nameHash(name string) uint64 { return maphash.String(listSeed, name) }

// errNoTmpfile is an O_TMPFILE refused by the file system (or a system
// without it): the file takes the temporary name instead.
var errNoTmpfile = errors.New("filestore: no unnamed files here")

// absent reports whether the directory, as listed, holds neither base
// nor tmp; false when it could not be listed.
func (h *dirHandle) absent(d *Dir, base, tmp string) bool {
	if h.noTmpfile.Load() {
		return false
	}
	h.lmu.Lock()
	defer h.lmu.Unlock()
	if h.listState == listNotYet {
		h.listState = listUnknown
		if room := listBudget - d.listedNames.Load(); room > 0 {
			if names, ok := h.list(d, min(listMax, int(room))); ok {
				h.listing, h.listState = names, listDone
				d.listedNames.Add(int64(len(names)))
			}
		}
	}
	if h.listState != listDone {
		return false
	}
	_, b := h.listing[nameHash(base)]
	_, t := h.listing[nameHash(tmp)]
	return !b && !t
}

// note adds name to the directory's listing, if it has one: this Dir
// put an entry of that name there. A listing that would pass its bounds
// is dropped.
func (h *dirHandle) note(d *Dir, name string) {
	h.lmu.Lock()
	defer h.lmu.Unlock()
	if h.listState != listDone {
		return
	}
	if len(h.listing) >= listMax || d.listedNames.Load() >= listBudget {
		d.listedNames.Add(-int64(len(h.listing)))
		h.listing, h.listState = nil, listUnknown
		return
	}
	if _, ok := h.listing[nameHash(name)]; !ok {
		h.listing[nameHash(name)] = struct{}{}
		d.listedNames.Add(1)
	}
}

// list reads the directory's entries, if there are at most max of them.
func (h *dirHandle) list(d *Dir, max int) (map[uint64]struct{}, bool) {
	names := make(map[uint64]struct{})
	err := h.eachName(d, func(name string) error {
		names[nameHash(name)] = struct{}{}
		if len(names) > max {
			return errTooMany
		}
		return nil
	})
	return names, err == nil
}

// eachName calls fn with each entry name of the directory, until fn
// says stop (its error, returned).
func (h *dirHandle) eachName(d *Dir, fn func(name string) error) error {
	return h.atDir(d, func(dirfd int) error {
		// A descriptor of its own: reading moves the offset.
		fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		buf := make([]byte, 8192)
		var got []string
		for {
			n, err := unix.ReadDirent(fd, buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			if n <= 0 {
				return nil
			}
			_, _, got = unix.ParseDirent(buf[:n], -1, got[:0])
			for _, name := range got {
				if err := fn(name); err != nil {
					return err
				}
			}
		}
	})
}

var errTooMany = errors.New("too many entries")

// noteMade adds the directory rel, just made, to its parent's listing.
func (d *Dir) noteMade(rel string) {
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		dir, base := splitRel(p)
		d.mu.Lock()
		h := d.dirs[dir]
		d.mu.Unlock()
		if h != nil {
			h.note(d, base)
		}
	}
}

// createUnnamed is Create's way for a file whose name, and partial's
// name, the directory's listing does not hold: an unnamed file, or
// nil (and no error) where there is no listing or no O_TMPFILE.
func (d *Dir) createUnnamed(rel, dir, base, tmp string) (*incoming, error) {
	h, err := d.openDir(dir, true)
	if err != nil {
		return nil, nil // the temporary name's way says why
	}
	if !h.absent(d, base, tmp) {
		d.putDir(h)
		return nil, nil
	}
	f, err := h.openUnnamed(d, rel)
	if err != nil {
		// No O_TMPFILE here, or a failure (the directory removed since
		// it was cached, no permission) that the temporary name's way
		// deals with and words as it always did.
		d.putDir(h)
		return nil, nil
	}
	in := &incoming{d: d, h: h, final: rel, dir: dir, base: base, tmp: tmp, f: f, unnamed: true, sparse: d.Sparse, prepared: true}
	in.countWrites()
	in.empty.Store(true)
	if err := d.beginName(rel); err != nil {
		in.Abort(false)
		return nil, err
	}
	// Taken: a second file of this name in this Dir takes the temporary
	// name's way, as before.
	h.note(d, base)
	return in, nil
}

// WillHold is told, before any data, the size the sender announced (-1:
// none) and whether it asks to resume (kermit.SizeHinted). An unnamed
// file that is too big to lose to a crash, of unknown size, or to be
// resumed (a partial may have appeared since the listing: a lost
// session of the same transfer keeps its own when it ends) goes the
// temporary name's way instead.
func (in *incoming) WillHold(size int64, resume bool) error {
	in.told = true
	in.d.flushBeforeLong(size)
	in.announced = size
	if err := in.fits(); err != nil {
		return err
	}
	if !in.unnamed || !resume && size >= 0 && size <= in.d.UnnamedMax {
		return nil
	}
	h, f, fresh, err := in.d.openTempFile(in.final, in.dir, in.base, in.tmp)
	if err != nil {
		return err // still unnamed; the caller's Abort ends it
	}
	in.f.close()
	in.d.putDir(in.h)
	in.h, in.f, in.unnamed = h, f, false
	in.prepare(fresh)
	return nil
}

// settle makes an unnamed file that was never told its size (a caller
// that does not know WillHold, a peer that sends no attributes) take
// the temporary name: nothing says it is small. Called, before any data,
// by the first use of the file; the engine's first is Truncate or
// Partial, on the receiving goroutine, before the data connections get
// the file.
func (in *incoming) settle() error {
	if in.unnamed && !in.told {
		return in.WillHold(-1, false)
	}
	return nil
}

// name gives the completed file its final name: the unnamed one by a
// link, the temporary name by a rename.
func (in *incoming) name() error {
	return in.nameFolding(func() error {
		if in.unnamed {
			return in.h.linkUnnamed(in.d, in.final, in.base, in.f)
		}
		if err := in.h.renameOurs(in.d, in.tmp, in.base, in.f); err != nil {
			if err == errNotOurs {
				return fmt.Errorf("filestore: %s: %w", in.final, err)
			}
			return err
		}
		in.h.note(in.d, in.base)
		return nil
	})
}

// linkUnnamed links the unnamed file f under base. A name taken since
// the directory was listed is met as a rename would meet it: a regular
// file there is replaced (the file linked under a name of its own, then
// renamed over it), a directory refuses the file (EISDIR), and so does
// anything else, as Create refuses it.
func (h *dirHandle) linkUnnamed(d *Dir, rel, base string, f *tempFile) error {
	err := h.linkFD(d, f, base)
	if err == nil {
		h.note(d, base)
		return nil
	}
	if !errors.Is(err, unix.EEXIST) {
		return err
	}
	if st, err := h.lstat(d, base); err == nil {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
		case unix.S_IFDIR:
			return &os.LinkError{Op: "rename", Old: "(received file)", New: rel, Err: unix.EISDIR}
		default:
			return fmt.Errorf("filestore: %s exists and is not a regular file (%s)", rel, EntryKind(statInfo{st: st}.Mode()))
		}
	}
	// A name no other receiver uses, and a partial's (IsPartName), so
	// that nothing serves it in the moment it exists.
	var own string
	for try := 0; ; try++ {
		var tag [4]byte
		rand.Read(tag[:])
		own = TempName(base + "~" + hex.EncodeToString(tag[:]))
		err := h.linkFD(d, f, own)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EEXIST) || try == 3 {
			return err
		}
	}
	if err := h.rename(d, own, base); err != nil {
		h.unlink(d, own)
		return err
	}
	h.note(d, base)
	return nil
}

// KeepsNothing reports whether an abort keeps nothing of the file for a
// resume (kermit.NothingKept): an unnamed one keeps nothing.
func (in *incoming) KeepsNothing() bool { return in.unnamed }
