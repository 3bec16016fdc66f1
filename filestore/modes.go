package filestore

import (
	"errors"

	"golang.org/x/sys/unix"
)

// modeRefused reports whether err, from setting the permission bits of
// a file this side made or a directory it fills, says the file system
// cannot hold them (vfat refuses a change of its fixed mode with EPERM,
// a FUSE file system without chmod says ENOSYS, others EOPNOTSUPP):
// the data is whole and verified, so the file is stored, as cp -a and
// rsync -rt store it, and the refusal is reported once (ModesNotKept),
// not as the file's failure (QA ad: every file on such a file system
// was left complete under its temporary name).
func modeRefused(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) ||
		errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTSUP)
}

func (d *Dir) noteModeNotKept(err error) {
	d.modeRefusal.CompareAndSwap(nil, &err) // before the count: ModesNotKept
	d.modesNotKept.Add(1)
}

// ModesNotKept reports how many files and directories were stored
// without the permission bits they were sent with, the file system
// refusing them, and the first refusal.
func (d *Dir) ModesNotKept() (int64, error) {
	n := d.modesNotKept.Load()
	if n == 0 {
		return 0, nil
	}
	return n, *d.modeRefusal.Load()
}
