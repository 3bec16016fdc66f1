package filestore

import "golang.org/x/sys/unix"

// fuseSuperMagic is the statfs type of every FUSE file system.
const fuseSuperMagic = 0x65735546

// fuseDir reports whether the directory dirfd is on a FUSE file system.
func fuseDir(dirfd int) bool {
	var st unix.Statfs_t
	err := ignoringEINTR(func() error { return unix.Fstatfs(dirfd, &st) })
	return err == nil && uint32(st.Type) == fuseSuperMagic
}
