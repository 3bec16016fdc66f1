package holes

import (
	"bytes"
	"io"

	"kerf/framing"
)

// DataPrefix returns where the data of [0, end) of r may first be
// missing: at the first run of run zeros aligned to run that begins at
// from or later (none: end; a shorter run at the end does not count),
// less the zeros just before it; and the CRC-32C of the bytes before
// that, read once. A file system without holes fills a range never
// written with zeros when a later one is written, so that a partial
// written out of order may lack data there; zeros before from are taken
// for data (a transfer's blocks land out of order only near its end).
func DataPrefix(r io.ReaderAt, end int64, run int, from int64) (int64, uint32, error) {
	buf := make([]byte, min(int64(16*run), max(end, int64(run))))
	zeros := make([]byte, run)
	var crc uint32
	// held is the last chunk read, kept out of crc until the next one
	// is seen not to be a run: its trailing zeros may be a missing
	// block's start (one that did not begin at a multiple of run, as
	// after a resume from a length that is not).
	held := make([]byte, 0, run)
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
		for i := 0; i < len(got); {
			pos := off + int64(i)
			next := min(len(got), i+run-int(pos%int64(run)))
			chunk := got[i:next]
			if len(chunk) == run && pos >= from && bytes.Equal(chunk, zeros) {
				keep := len(bytes.TrimRight(held, "\x00"))
				return pos - int64(len(held)-keep), framing.UpdateCRC32C(crc, held[:keep]), nil
			}
			crc = framing.UpdateCRC32C(crc, held)
			held = append(held[:0], chunk...)
			i = next
		}
		off += int64(n)
	}
	return end, framing.UpdateCRC32C(crc, held), nil
}
