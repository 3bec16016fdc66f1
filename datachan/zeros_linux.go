package datachan

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// hasHoles reports whether f has fewer 512-byte blocks allocated than
// its size needs: a sparse file (or one a file system compresses, for
// which isHole then finds data everywhere).
func hasHoles(f *os.File) bool {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return st.Blocks*512 < st.Size
}

// isHole reports whether [pos, pos+l) of f lies in a hole: no data from
// pos on before pos+l (SEEK_DATA). An error says no. It moves the file's
// offset, which nothing on the data path uses (blocks are read with
// pread and sent with sendfile at their own offsets).
func isHole(f *os.File, pos, l int64) bool {
	next, err := unix.Seek(int(f.Fd()), pos, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		return true // no data from pos to the end
	}
	return err == nil && next >= pos+l
}
