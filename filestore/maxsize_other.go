//go:build !linux

package filestore

// fits refuses nothing here: the limits it knows (FAT's statfs type,
// RLIMIT_FSIZE's type) are Linux's; the writes tell.
func (in *incoming) fits() error { return nil }
