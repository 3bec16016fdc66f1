package filestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"path"

	"golang.org/x/sys/unix"
)

// readDirEntries reads the entries of the open directory d: names and
// types from getdents(2), each entry's details only when its Info is
// asked for, with fstatat on d while it is open (through the root once
// it is closed).
//
// os.File.ReadDir of a directory opened in an os.Root lstats every entry
// as it reads it, and the details stay with the entry: a GET's walk
// held every entry's details of each directory it was in, and each
// session serving one share of a GET stat'ed the whole directory (QA:
// one directory of 50,000 files, 140 MB for four sessions).
func readDirEntries(d *openDir) ([]fs.DirEntry, error) {
	f := d.f
	fd := int(f.Fd())
	var ents []fs.DirEntry
	buf := make([]byte, 64<<10)
	for {
		n, err := ignoringEINTRn(func() (int, error) { return unix.Getdents(fd, buf) })
		if err != nil {
			// The path in the tree: f.Name() begins with the root's own
			// path, which a client must not see (QA).
			return ents, &fs.PathError{Op: "readdirent", Path: d.rel, Err: err}
		}
		if n <= 0 {
			return ents, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino, off (8 bytes each), reclen
			// (2), type (1), the name ending in NUL.
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			typ := b[18]
			b = b[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			e := &lazyEntry{dir: d, name: string(name)}
			if t, ok := direntType(typ); ok {
				e.typ = t
			} else if _, err := e.Info(); err == nil {
				e.typ = e.info.Mode().Type() // a file system that does not say
			} else if errors.Is(err, fs.ErrNotExist) {
				continue // gone since it was read
			} else {
				return ents, err // as os.ReadDir says it
			}
			ents = append(ents, e)
		}
	}
}

// direntType is the type a dirent's d_type says, if it says one.
func direntType(t byte) (fs.FileMode, bool) {
	switch t {
	case unix.DT_REG:
		return 0, true
	case unix.DT_DIR:
		return fs.ModeDir, true
	case unix.DT_LNK:
		return fs.ModeSymlink, true
	case unix.DT_FIFO:
		return fs.ModeNamedPipe, true
	case unix.DT_SOCK:
		return fs.ModeSocket, true
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, true
	case unix.DT_BLK:
		return fs.ModeDevice, true
	}
	return 0, false
}

// lazyEntry is a directory entry whose details are read when asked for.
type lazyEntry struct {
	dir  *openDir
	name string
	typ  fs.FileMode
	info fs.FileInfo
}

func (e *lazyEntry) Name() string      { return e.name }
func (e *lazyEntry) IsDir() bool       { return e.typ.IsDir() }
func (e *lazyEntry) Type() fs.FileMode { return e.typ }
func (e *lazyEntry) String() string    { return fs.FormatDirEntry(e) }

// Info reads the entry's details (not following a link), once.
func (e *lazyEntry) Info() (fs.FileInfo, error) {
	if e.info != nil {
		return e.info, nil
	}
	if e.dir.closed {
		fi, err := e.dir.root.Lstat(path.Join(e.dir.rel, e.name))
		if err != nil {
			return nil, err
		}
		e.info = fi
		return fi, nil
	}
	var st unix.Stat_t
	if err := ignoringEINTR(func() error {
		return unix.Fstatat(int(e.dir.f.Fd()), e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: path.Join(e.dir.rel, e.name), Err: err}
	}
	e.info = statInfo{name: e.name, st: st}
	return e.info, nil
}

// ignoringEINTRn is ignoringEINTR for a call that also counts.
func ignoringEINTRn(f func() (int, error)) (int, error) {
	for {
		if n, err := f(); err != unix.EINTR {
			return n, err
		}
	}
}
