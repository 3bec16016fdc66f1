package auth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrStateUnprotected is why a server does not start on a state
// directory others could change: whoever can write its users file or
// key can log in as anyone, with any root (QA: a users file replaced by
// the nobody user gave it the server's whole file system).
var ErrStateUnprotected = errors.New("auth: the server's state is not protected")

// CheckStateProtected checks, as sshd's StrictModes does, that the
// state directory dir, its users file and its key are owned by this
// user or root and writable by no one else, and that the key is
// readable by no one else. Files not there are not checked.
func CheckStateProtected(dir string) error {
	for _, p := range []string{dir, filepath.Join(dir, UsersFileName), filepath.Join(dir, KeyFileName)} {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("auth: %w", err)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%w: %s has mode %#o, writable by others; run chmod go-w %s", ErrStateUnprotected, p, fi.Mode().Perm(), p)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if uid := uint32(os.Geteuid()); st.Uid != uid && st.Uid != 0 {
				return fmt.Errorf("%w: %s belongs to user %d, not to this one (%d) or root", ErrStateUnprotected, p, st.Uid, uid)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFileName)); err == nil {
		return checkKeyProtected(filepath.Join(dir, KeyFileName))
	}
	return nil
}
