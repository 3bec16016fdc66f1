package holes

import (
	"bytes"
	"io"

	"kerf/framing"
)

// DataPrefix returns where the first run of run zeros aligned to run
// begins in [0, end) of r (end if there is none; a shorter run at the
// end does not count), and the CRC-32C of the bytes before it, read
// once. A file system without holes fills a range never written with
// zeros when a later one is written, so that this is where a partial
// written out of order may first lack data.
func DataPrefix(r io.ReaderAt, end int64, run int) (int64, uint32, error) {
	buf := make([]byte, min(int64(16*run), max(end, int64(run))))
	zeros := make([]byte, run)
	var crc uint32
	for off := int64(0); off < end; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		switch {
		case err == io.EOF && off+int64(n) < end:
			return 0, 0, io.ErrUnexpectedEOF
		case err != nil && err != io.EOF:
			return 0, 0, err
		case n == 0:
			return 0, 0, io.ErrNoProgress
		}
		got := buf[:n]
		// Chunks aligned to run: off is one whenever n was whole runs.
		for i := 0; i < len(got); {
			next := min(len(got), i+run-int((off+int64(i))%int64(run)))
			if next-i == run && bytes.Equal(got[i:next], zeros) {
				return off + int64(i), framing.UpdateCRC32C(crc, got[:i]), nil
			}
			i = next
		}
		crc = framing.UpdateCRC32C(crc, got)
		off += int64(n)
	}
	return end, crc, nil
}
