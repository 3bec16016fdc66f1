//go:build !linux

package filestore

// fuseDir: only Linux's FUSE file systems are told (retime).
func fuseDir(dirfd int) bool { return false }

// fatLikeDir: elsewhere the file system is not told; a refused name
// with FAT's forbidden characters is said to be likely the name's fault.
func fatLikeDir(dirfd int) bool { return true }
