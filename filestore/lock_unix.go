//go:build unix

package filestore

import (
	"errors"
	"os"
	"syscall"
)

// lockPart takes an exclusive, non-blocking lock on a file being
// received, so that two sessions never write the same temporary file. It
// reports false if another holder has it. The lock ends when f is closed.
func lockPart(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
