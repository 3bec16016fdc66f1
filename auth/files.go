package auth

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// writeFileAtomic writes data to a temporary file beside path and
// renames it into place, creating the directory (0700) if needed.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
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
