package filestore_test

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// unprivileged runs f with the permission checks of a server that is not
// root. As root it runs f on a thread of its own with CAP_DAC_OVERRIDE
// and CAP_DAC_READ_SEARCH dropped: capabilities are per thread, and the
// thread is never unlocked, so it ends with f's goroutine.
func unprivileged(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		f()
		return
	}
	var capErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if capErr = unix.Capget(&hdr, &data[0]); capErr != nil {
			return
		}
		for _, c := range []uint{unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH} {
			data[c/32].Effective &^= 1 << (c % 32)
		}
		if capErr = unix.Capset(&hdr, &data[0]); capErr != nil {
			return
		}
		f()
	}()
	<-done
	if capErr != nil {
		t.Skipf("cannot drop capabilities: %v", capErr)
	}
}
