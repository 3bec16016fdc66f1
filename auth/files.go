package auth

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// writeFileAtomic writes data to a temporary file beside path and
// renames it into place, creating the directory (0700) if needed.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// A link stays a link (a users file kept elsewhere, say under
		// configuration management): the file it leads to is replaced,
		// beside itself (QA: the link was replaced by a file).
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("auth: %s is a symbolic link to nothing that can be written: %w", path, err)
		}
		path = target
	}
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("auth: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// publishFile writes data to a temporary file beside path and links it
// to path, which fails (an error wrapping fs.ErrExist) if path exists:
// of processes publishing at once exactly one succeeds, and path is
// never seen incomplete.
func publishFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	err = os.Link(tmp, path)
	os.Remove(tmp)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// writeTemp writes data, synced, to a new temporary file in path's
// directory (made 0700 if needed) and returns its name.
func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if uid, gid, ok := ownerFor(path); err == nil && ok && (uid != 0 || gid != 0) {
		// Best effort: root that may not chown (NFS root squash, a
		// user namespace) still writes the file, as before.
		f.Chown(uid, gid)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("auth: %w", err)
	}
	return tmp, nil
}

// ownerFor says whom a file written at path should belong to when this
// process runs as root: the owner of the file it replaces, or else of
// its directory. An administrator's `sudo kerf user add` otherwise left
// the users file root's and 0600, and a server running as its own user
// could no longer read it: every login failed. ok is false when not
// root (a file is then its writer's, as it can only be).
func ownerFor(path string) (uid, gid int, ok bool) {
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err == nil {
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			// The rename replaces the link itself: whose target it
			// names says nothing of whom the file is for.
			return 0, 0, false
		}
	} else if err := unix.Stat(filepath.Dir(path), &st); err != nil {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// syncDir makes a rename or link in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}

// lockFile waits for an exclusive flock(2) on path+".lock" (created if
// need be) and returns what releases it. The lock is on a file of its
// own because the guarded file is replaced by rename; the kernel drops
// it if the process dies, so a crash leaves no stale lock.
func lockFile(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("auth: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}
