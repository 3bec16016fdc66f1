package filestore

import (
	"errors"
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
// the record: what is written after it is not covered. none says the
// file system keeps no user extended attributes, so that no record of
// any kind can be on the file.
func (t *tempFile) takePrefix() (n int64, ok, none bool) {
	var buf [24]byte
	var got int
	err := ignoringEINTR(func() error {
		var err error
		got, err = unix.Fgetxattr(t.fd, prefixAttr, buf[:])
		return err
	})
	if err != nil {
		return 0, false, errors.Is(err, unix.ENOTSUP)
	}
	ignoringEINTR(func() error { return unix.Fremovexattr(t.fd, prefixAttr) })
	v, err := strconv.ParseInt(string(buf[:got]), 10, 64)
	return v, err == nil && v >= 0, false
}

// clearPrefix takes the record off: the file is complete, and a record
// is for a resume, not for the file under its name.
func (t *tempFile) clearPrefix() {
	ignoringEINTR(func() error { return unix.Fremovexattr(t.fd, prefixAttr) })
}

// keptAttr records, on a partial kept for recovery, the ranges past its
// gap-free prefix that hold received data (blocks that came over other
// data connections after one stalled): "PREFIX;OFF-END,OFF-END…" in hex.
// PartialKept offers them to the sender, which then sends only the gaps.
const keptAttr = "user.kerf.kept"

// setKept records prefix and ranges; unlike setPrefix it says whether it
// could, since a partial whose gaps are not recorded must be cut at its
// prefix.
func (t *tempFile) setKept(prefix int64, ranges [][2]int64) error {
	return ignoringEINTR(func() error { return unix.Fsetxattr(t.fd, keptAttr, encodeKept(prefix, ranges), 0) })
}

// takeKept returns what setKept recorded, if anything readable, and
// removes the record: what is written after it is not covered.
func (t *tempFile) takeKept() (prefix int64, ranges [][2]int64, ok bool) {
	buf := make([]byte, 64+maxKeptRanges*34)
	var n int
	err := ignoringEINTR(func() error {
		var err error
		n, err = unix.Fgetxattr(t.fd, keptAttr, buf)
		return err
	})
	if err != nil {
		return 0, nil, false
	}
	ignoringEINTR(func() error { return unix.Fremovexattr(t.fd, keptAttr) })
	return decodeKept(buf[:n])
}

// clearKept takes the record off (see clearPrefix).
func (t *tempFile) clearKept() {
	ignoringEINTR(func() error { return unix.Fremovexattr(t.fd, keptAttr) })
}

// punchHole makes [off, off+n) of the file a hole (zeros), keeping its
// size: a kept partial's gaps, which may hold bytes that are not data.
func (t *tempFile) punchHole(off, n int64) error {
	return ignoringEINTR(func() error {
		return unix.Fallocate(t.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	})
}
