//go:build !linux

package filestore

// fuseDir: only Linux's FUSE file systems are told (retime).
func fuseDir(dirfd int) bool { return false }
