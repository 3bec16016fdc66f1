package filestore

import "golang.org/x/sys/unix"

// syncfsMin is the smallest batch made durable with syncfs(2).
const syncfsMin = 8

// syncFilesystems writes out everything dirty on the file systems that
// hold files, with one syncfs per file system (found from the files'
// directories), and returns the first failure. It is a way
// to get one journal commit for many files, not a check: syncfs hands a
// write-back error to the first descriptor that asks (and before Linux
// 5.8 to none), so the caller still fsyncs each file for its own.
func (d *Dir) syncFilesystems(files []*incoming) error {
	seenDir := make(map[*dirHandle]bool)
	seenDev := make(map[uint64]bool) // Dev is narrower on some platforms
	for _, in := range files {
		if seenDir[in.h] {
			continue
		}
		seenDir[in.h] = true
		err := in.h.atDir(d, func(fd int) error {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return err
			}
			if seenDev[uint64(st.Dev)] {
				return nil
			}
			seenDev[uint64(st.Dev)] = true
			return unix.Syncfs(fd)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
