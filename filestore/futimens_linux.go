package filestore

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// futimens sets the access and modification times of the open file fd:
// utimensat(fd, NULL, ...), which x/sys/unix does not offer (its
// UtimesNanoAt wants a name, and a name may by now be another file's).
func futimens(fd int, ts *[2]unix.Timespec) error {
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
