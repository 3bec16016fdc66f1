package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
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
	acl := h.defaultACL.Load()
	err := h.atDir(d, func(dirfd int) error {
		if acl == aclUnknown {
			acl = defaultACLOf(dirfd)
			h.defaultACL.Store(acl)
		}
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
	if mask, ok := processUmask(); ok && acl == aclNone {
		// What the kernel made of unnamedMode: the umask applies where
		// the directory has no default ACL (which would replace it).
		t.mode, t.modeKnown = unnamedMode&^mask, true
	}
	return t, nil
}

// unnamedMode is the mode an unnamed file is created with: a sender's
// usual one, and kerf's default for a file sent without one.
const unnamedMode = 0o644

// The states of dirHandle.defaultACL.
const (
	aclUnknown int32 = iota // not looked at yet
	aclNone                 // the directory has no default ACL
	aclSome                 // it has one, or could not be asked
)

// defaultACLOf says whether the directory dirfd has a default ACL, which
// decides a new file's mode in place of the umask. A file system without
// ACLs has none.
func defaultACLOf(dirfd int) int32 {
	_, err := unix.Fgetxattr(dirfd, "system.posix_acl_default", nil)
	if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP) {
		return aclNone
	}
	return aclSome
}

// processUmask is the process's umask, read once from /proc/self/status
// (Linux 4.7 on; asking umask(2) would have to set it, which races with
// files created meanwhile). kerf never changes it. Not known without
// /proc.
var processUmask = sync.OnceValues(func() (uint32, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			return uint32(m), err == nil
		}
	}
	return 0, false
})

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
