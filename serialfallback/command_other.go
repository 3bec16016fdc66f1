//go:build !linux

package serialfallback

import (
	"os"
	"syscall"
)

// descendants finds nothing here: only the command's shell is
// signalled.
func descendants(int) []int { return nil }

// signalAll signals each of pids.
func signalAll(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		if p, err := os.FindProcess(pid); err == nil {
			p.Signal(sig)
		}
	}
}
