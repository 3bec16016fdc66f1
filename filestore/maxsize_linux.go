package filestore

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// msdosMagic is the statfs type of FAT (vfat, msdos): files of at most
// 4 GiB - 1 bytes.
const msdosMagic = 0x4d44

// fileSizeLimit is this process's RLIMIT_FSIZE (0: none), read once.
var fileSizeLimit = sync.OnceValue(func() uint64 {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_FSIZE, &rl) != nil || rl.Cur == unix.RLIM_INFINITY {
		return 0
	}
	return rl.Cur
})

// fits refuses, before its data, a file announced larger than the
// destination can hold: this process's RLIMIT_FSIZE, or a FAT file
// system's 4 GiB - 1 (QA ad: a 5 GiB file to FAT wrote 4 GiB, then
// failed, its partial kept for a resume that could never finish).
func (in *incoming) fits() error {
	size := in.announced
	if size <= 0 {
		return nil
	}
	if limit := fileSizeLimit(); limit > 0 && uint64(size) > limit {
		return fmt.Errorf("filestore: %s: %w: it has %d bytes, and this process may write files of at most %d (RLIMIT_FSIZE)", in.final, unix.EFBIG, size, limit)
	}
	if size <= 1<<32-1 {
		return nil
	}
	var st unix.Statfs_t
	err := in.h.atDir(in.d, func(dirfd int) error { return unix.Fstatfs(dirfd, &st) })
	if err == nil && uint32(st.Type) == msdosMagic {
		return fmt.Errorf("filestore: %s: %w: it has %d bytes, and a FAT file system holds files of at most %d", in.final, unix.EFBIG, size, int64(1<<32-1))
	}
	return nil
}
