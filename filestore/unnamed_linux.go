package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// openUnnamed creates an unnamed file (O_TMPFILE) in the directory, for
// the file rel (which errors name). It is created with unnamedMode, the
// mode most files are committed with, so that their commit need not
// change it: no one can open a file without a name (its /proc/PID/fd
// entry is this process's user's and root's alone), and the commit sets
// the file's own mode before the link gives it a name.
func (h *dirHandle) openUnnamed(d *Dir, rel string) (*tempFile, error) {
	if h.noTmpfile.Load() {
		return nil, errNoTmpfile
	}
	fd := -1
	err := h.atDir(d, func(dirfd int) error {
		return ignoringEINTR(func() error {
			var err error
			fd, err = unix.Openat(dirfd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, unnamedMode)
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
	t := &tempFile{fd: fd, dir: h.rel, base: path.Base(rel)}
	// What the kernel makes of unnamedMode here (the umask, or the
	// directory's default ACL in its place, or a file system's own
	// rules) is the same for every file the directory gets: asked of the
	// first one.
	m := h.createdMode.Load()
	if m&modeSeen == 0 {
		var st unix.Stat_t
		if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err == nil {
			m = st.Mode&0o7777 | modeSeen
			h.createdMode.Store(m)
		}
	}
	if m&modeSeen != 0 {
		t.mode, t.modeKnown = m&^modeSeen, true
	}
	return t, nil
}

// unnamedMode is the mode an unnamed file is created with: a sender's
// usual one, and kerf's default for a file sent without one.
const unnamedMode = 0o644

// modeSeen marks dirHandle.createdMode as known (its zero value: not
// asked yet).
const modeSeen = 1 << 31

// linkFD links the open file f under name in the directory, never
// replacing what is there (EEXIST). linkat with AT_EMPTY_PATH names the
// descriptor itself, the cheaper call (no walk through /proc), where the
// kernel allows it: to a process with CAP_DAC_READ_SEARCH, and since
// Linux 6.10 to the one that opened the file. Elsewhere it fails with
// ENOENT, and the file is linked through /proc/self/fd, which every
// process may; the first such failure makes that the only way after.
func (h *dirHandle) linkFD(d *Dir, f *tempFile, name string) error {
	if err := plainName(name); err != nil {
		return err
	}
	err := h.atDir(d, func(dirfd int) error {
		if !emptyPathRefused.Load() {
			err := unix.Linkat(f.fd, "", dirfd, name, unix.AT_EMPTY_PATH)
			if !errors.Is(err, unix.ENOENT) {
				return err
			}
		}
		err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(f.fd), dirfd, name, unix.AT_SYMLINK_FOLLOW)
		if err == nil && !emptyPathRefused.Load() {
			// The same directory took the link this way: the ENOENT
			// was the kernel's refusal, not a missing directory.
			emptyPathRefused.Store(true)
		}
		return err
	})
	if err != nil {
		return &os.LinkError{Op: "linkat", Old: "(unnamed file)", New: path.Join(h.rel, name), Err: err}
	}
	return nil
}

// emptyPathRefused is set once linkat refused AT_EMPTY_PATH (an older
// kernel, no CAP_DAC_READ_SEARCH): a property of the process and kernel.
var emptyPathRefused atomic.Bool
