package filestore

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// prefixAttr records, on a partial file kept for recovery, how much of it
// is received data: holes included, which a sparse receive leaves where
// the data is zeros. Without it a recovery could only trust the file up
// to its first hole (Partial). A receiver that stops cleanly records it
// at its end, and a sparse receive as it goes (gapFree).
const prefixAttr = "user.kerf.prefix"

// setPrefix records that [0, n) of the file is received data. It is best
// effort: a file system without user extended attributes keeps none.
func (t *tempFile) setPrefix(n int64) {
	ignoringEINTR(func() error { return unix.Fsetxattr(t.fd, prefixAttr, strconv.AppendInt(nil, n, 10), 0) })
}

// takePrefix returns the length setPrefix recorded, if any, and removes
// the record: what is written after it is not covered.
func (t *tempFile) takePrefix() (int64, bool) {
	var buf [24]byte
	var n int
	err := ignoringEINTR(func() error {
		var err error
		n, err = unix.Fgetxattr(t.fd, prefixAttr, buf[:])
		return err
	})
	if err != nil {
		return 0, false
	}
	ignoringEINTR(func() error { return unix.Fremovexattr(t.fd, prefixAttr) })
	v, err := strconv.ParseInt(string(buf[:n]), 10, 64)
	return v, err == nil && v >= 0
}

// clearPrefix takes the record off: the file is complete, and a record
// is for a resume, not for the file under its name.
func (t *tempFile) clearPrefix() {
	ignoringEINTR(func() error { return unix.Fremovexattr(t.fd, prefixAttr) })
}
