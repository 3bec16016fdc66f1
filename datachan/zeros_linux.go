package datachan

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// hasHoles reports whether f has fewer 512-byte blocks allocated than
// its size needs: a sparse file (or one a file system compresses, in
// which dataAt then finds one run of data, once).
func hasHoles(f *os.File) bool {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return st.Blocks*512 < st.Size
}

// dataAt looks at [pos, pos+l) of f: hole reports that it lies wholly
// in a hole (no data from pos on before pos+l, SEEK_DATA, and within the
// file's size: a file that shrank is read, and found short); otherwise
// [from, to) is a run of data that reaches into it (SEEK_HOLE), which
// the caller may keep so as not to ask again for the blocks within it.
// An error says data, with an empty run. It moves the file's offset,
// which nothing on the data path uses (blocks are read with pread and
// sent with sendfile at their own offsets).
func dataAt(f *os.File, pos, l int64) (hole bool, from, to int64) {
	fd := int(f.Fd())
	next, err := unix.Seek(fd, pos, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		// No data from pos to the end, or pos is past the end.
		var st unix.Stat_t
		return unix.Fstat(fd, &st) == nil && pos+l <= st.Size, 0, 0
	}
	if err != nil {
		return false, 0, 0
	}
	if next >= pos+l {
		return true, 0, 0
	}
	end, err := unix.Seek(fd, next, unix.SEEK_HOLE)
	if err != nil {
		return false, 0, 0
	}
	return false, next, end
}
