//go:build !linux

package holes

import (
	"io"

	"kerf/framing"
)

// CRC32C is the CRC-32C of bytes [off, end) of r, all of it read:
// holes are told only on Linux.
func CRC32C(_ int, r io.ReaderAt, off, end int64) (uint32, error) {
	var crc uint32
	buf := make([]byte, min(256<<10, max(end-off, 0)))
	for off < end {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		crc = framing.UpdateCRC32C(crc, buf[:n])
		off += int64(n)
		if err == io.EOF && off < end {
			return 0, io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
		if n == 0 && err == nil {
			return 0, io.ErrNoProgress
		}
	}
	return crc, nil
}
