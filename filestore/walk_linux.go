package filestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readDirEntries hands add the name and type of each entry of the open
// directory d, from getdents(2); an entry's details only if its file
// system does not give its type.
//
// os.File.ReadDir of a directory opened in an os.Root lstats every entry
// as it reads it, and the details stay with the entry: a GET's walk
// held every entry's details of each directory it was in, and each
// session serving one share of a GET stat'ed the whole directory (QA:
// one directory of 50,000 files, 140 MB for four sessions).
func readDirEntries(d *openDir, add func(name []byte, typ fs.FileMode) error) error {
	fd := int(d.f.Fd())
	buf := make([]byte, 64<<10)
	for {
		n, err := ignoringEINTRn(func() (int, error) { return unix.Getdents(fd, buf) })
		if err != nil {
			// The path in the tree: f.Name() begins with the root's own
			// path, which a client must not see (QA).
			return &fs.PathError{Op: "readdirent", Path: d.rel, Err: err}
		}
		if n <= 0 {
			return nil
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
			t, ok := direntType(typ)
			if !ok {
				// A file system that does not say.
				e := &lazyEntry{dir: d, name: string(name)}
				fi, err := e.Info()
				switch {
				case errors.Is(err, fs.ErrNotExist):
					continue // gone since it was read
				case err != nil:
					return err // as os.ReadDir says it
				}
				t = fi.Mode().Type()
			}
			if err := add(name, t); err != nil {
				return err
			}
		}
	}
}

// spillFile is a file for a big directory's runs: with no name (the
// runs hold names of a tree others may not see, and go with the list,
// or with the process if it dies), or removed as soon as it is made
// where the file system has no O_TMPFILE.
func spillFile(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_RDWR|unix.O_TMPFILE, 0o600)
	if err == nil {
		return f, nil
	}
	return namedSpillFile(dir)
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

// ignoringEINTRn is ignoringEINTR for a call that also counts.
func ignoringEINTRn(f func() (int, error)) (int, error) {
	for {
		if n, err := f(); err != unix.EINTR {
			return n, err
		}
	}
}
