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

// fatLikeDir reports whether the directory dirfd is on a file system
// that may refuse names FAT refuses: FAT, exFAT, or FUSE (exfat-fuse,
// fusefat, ntfs-3g), where Linux does not tell which.
func fatLikeDir(dirfd int) bool {
	var st unix.Statfs_t
	if ignoringEINTR(func() error { return unix.Fstatfs(dirfd, &st) }) != nil {
		return false
	}
	switch uint32(st.Type) {
	case fuseSuperMagic, 0x4d44, 0x2011bab0: // FUSE, MSDOS (vfat), exFAT
		return true
	}
	return false
}
