// Package holes reads files with holes: the CRC-32C of a range with its
// holes counted as zeros, not read. Shared by filestore (a receiver's
// partial) and kermit (a sender's own file), which cannot import each
// other's file code.
package holes

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"

	"kerf/framing"
)

// CRC32C is the CRC-32C of bytes [off, end) of the file open as fd
// (read through r): the runs of data read, the holes between them
// counted as zeros without reading them (SEEK_DATA, SEEK_HOLE), so that
// the check of a sparse image's partial costs its data, not its size
// (QA aa: a 20 GiB image's resume took 23 s, reading holes). Where the
// file system cannot tell holes (or fd is -1, r no file), all of it is
// read.
func CRC32C(fd int, r io.ReaderAt, off, end int64) (uint32, error) {
	var crc uint32
	var buf []byte // one for all the runs of data
	read := func(from, to int64) error {
		if buf == nil {
			buf = bufFor(end - off)
		}
		var err error
		crc, err = readCRC(crc, r, buf, from, to)
		return err
	}
	for pos := off; pos < end; {
		data, err := unix.Seek(fd, pos, unix.SEEK_DATA)
		switch {
		case errors.Is(err, unix.ENXIO):
			// No data from pos on, or pos is past the end: only the
			// first is zeros.
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil || st.Size < end {
				return 0, io.ErrUnexpectedEOF
			}
			data = end
		case err != nil:
			// Holes not told: read it all. (Not "return crc, read()":
			// crc could be taken before read adds to it.)
			err := read(pos, end)
			return crc, err
		}
		if data > pos {
			n := min(data, end) - pos
			crc = framing.CombineCRC32C(crc, framing.ZerosCRC32C(n), n)
			pos += n
			continue
		}
		hole, err := unix.Seek(fd, pos, unix.SEEK_HOLE)
		if err != nil || hole <= pos {
			hole = end
		}
		if err := read(pos, min(hole, end)); err != nil {
			return 0, err
		}
		pos = min(hole, end)
	}
	return crc, nil
}
