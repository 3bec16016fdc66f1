//go:build !linux

package filestore

import "golang.org/x/sys/unix"

// futimens sets the access and modification times of the open file fd
// (to the microsecond: futimes).
func futimens(fd int, ts *[2]unix.Timespec) error {
	tv := []unix.Timeval{
		unix.NsecToTimeval(unix.TimespecToNsec(ts[0])),
		unix.NsecToTimeval(unix.TimespecToNsec(ts[1])),
	}
	return unix.Futimes(fd, tv)
}

// openToChmod opens a file only to check and change its mode. Without
// O_PATH it is opened for reading (O_NONBLOCK: a FIFO in its place must
// not block the open; it is refused as not a regular file).
const openToChmod = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_CLOEXEC

// chmodOpened changes the mode of the file opened with openToChmod.
func chmodOpened(fd int, perm uint32) error { return unix.Fchmod(fd, perm) }
