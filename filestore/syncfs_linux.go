package filestore

import "golang.org/x/sys/unix"

// syncfsMin is the smallest batch made durable with syncfs(2).
const syncfsMin = 8

// syncFilesystems makes everything written to the file systems that
// hold files durable, with one syncfs per file system (found from the
// files' directories), and reports whether every call succeeded. syncfs
// reports write-back errors of the whole file system since the
// descriptor was opened, so a false here may be another file's failure;
// the caller then syncs file by file to find out.
func (d *Dir) syncFilesystems(files []*incoming) bool {
	seenDir := make(map[*dirHandle]bool)
	seenDev := make(map[uint64]bool)
	for _, in := range files {
		if seenDir[in.h] {
			continue
		}
		seenDir[in.h] = true
		ok := false
		err := in.h.atDir(d, func(fd int) error {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return err
			}
			if seenDev[st.Dev] {
				ok = true
				return nil
			}
			if err := unix.Syncfs(fd); err != nil {
				return err
			}
			seenDev[st.Dev] = true
			ok = true
			return nil
		})
		if err != nil || !ok {
			return false
		}
	}
	return true
}
