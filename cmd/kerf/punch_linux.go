package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// punchHole gives back the space of bytes off..off+n of f, where the
// file system can (best effort: they are not read again).
func punchHole(f *os.File, off, n int64) {
	unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}
