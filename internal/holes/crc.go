package holes

import (
	"io"

	"kerf/framing"
)

// readCRC continues crc over bytes [from, to) of r, read through buf.
func readCRC(crc uint32, r io.ReaderAt, buf []byte, from, to int64) (uint32, error) {
	for from < to {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), to-from)], from)
		crc = framing.UpdateCRC32C(crc, buf[:n])
		from += int64(n)
		switch {
		case err == io.EOF && from < to:
			return crc, io.ErrUnexpectedEOF // the file is shorter than the range
		case err != nil && err != io.EOF:
			return crc, err
		case n == 0 && err == nil:
			return crc, io.ErrNoProgress
		}
	}
	return crc, nil
}

// bufFor is a read buffer for a range of n bytes.
func bufFor(n int64) []byte { return make([]byte, min(256<<10, max(n, 0))) }
