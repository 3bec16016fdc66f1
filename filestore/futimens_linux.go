package filestore

import (
	"fmt"
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

// openToChmod opens a file only to check and change its mode: O_PATH
// needs no read permission (a file of mode 000 gets its mode too).
const openToChmod = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC

// chmodOpened changes the mode of the file opened with openToChmod:
// fchmod refuses an O_PATH descriptor; its /proc name reaches the same
// inode.
func chmodOpened(fd int, perm uint32) error {
	return unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), perm, 0)
}
