package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed creates an unnamed file (O_TMPFILE) in the directory, for
// the file rel (which errors name).
func (h *dirHandle) openUnnamed(d *Dir, rel string) (*tempFile, error) {
	if h.noTmpfile.Load() {
		return nil, errNoTmpfile
	}
	fd := -1
	err := h.atDir(d, func(dirfd int) error {
		return ignoringEINTR(func() error {
			var err error
			fd, err = unix.Openat(dirfd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
			return err
		})
	})
	switch {
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EISDIR), errors.Is(err, unix.EINVAL):
		// No O_TMPFILE in this file system (or kernel).
		h.noTmpfile.Store(true)
		return nil, errNoTmpfile
	case err != nil:
		// Said of the file, as the temporary name's way says it.
		return nil, fmt.Errorf("filestore: %w", &fs.PathError{Op: "open", Path: rel, Err: err})
	}
	return &tempFile{fd: fd, dir: h.rel, base: path.Base(rel)}, nil
}

// linkFD links the open file f under name in the directory, through
// /proc/self/fd (linkat with AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH),
// never replacing what is there (EEXIST).
func (h *dirHandle) linkFD(d *Dir, f *tempFile, name string) error {
	if err := plainName(name); err != nil {
		return err
	}
	err := h.atDir(d, func(dirfd int) error {
		err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(f.fd), dirfd, name, unix.AT_SYMLINK_FOLLOW)
		if errors.Is(err, unix.ENOENT) {
			// No /proc: the other way, for a process that may.
			err = unix.Linkat(f.fd, "", dirfd, name, unix.AT_EMPTY_PATH)
		}
		return err
	})
	if err != nil {
		return &os.LinkError{Op: "linkat", Old: "(unnamed file)", New: path.Join(h.rel, name), Err: err}
	}
	return nil
}
