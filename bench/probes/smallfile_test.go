//go:build linux

package probes

import (
	"fmt"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// Receiving a small file: a temporary name renamed into place (kerf), an
// unnamed O_TMPFILE linked into place, and a direct create (tar). Each
// writes 16 KiB; docs/benchmarks.md, "Many small files".

var buf = make([]byte, 16384)

// dir opens a new directory under TMPDIR (use tmpfs) for one benchmark.
func dir(b *testing.B) int {
	fd, err := unix.Open(b.TempDir(), unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	return fd
}

func BenchmarkNamedRename(b *testing.B) {
	d := dir(b)
	for i := 0; i < b.N; i++ {
		n := "f" + strconv.Itoa(i)
		fd, err := unix.Openat(d, ".kerf-"+n+".part", unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC, 0600)
		if err != nil {
			b.Fatal(err)
		}
		unix.Pwrite(fd, buf, 0)
		if err := unix.Renameat(d, ".kerf-"+n+".part", d, n); err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}

// benchTmpfile creates each file unnamed (O_TMPFILE), writes it and
// gives it its name with link.
func benchTmpfile(b *testing.B, link func(fd, d int, name string) error) {
	d := dir(b)
	for i := 0; i < b.N; i++ {
		fd, err := unix.Openat(d, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0600)
		if err != nil {
			b.Fatal(err)
		}
		unix.Pwrite(fd, buf, 0)
		if err := link(fd, d, "f"+strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}

func BenchmarkTmpfileLinkEmptyPath(b *testing.B) {
	benchTmpfile(b, func(fd, d int, name string) error { return unix.Linkat(fd, "", d, name, unix.AT_EMPTY_PATH) })
}

func BenchmarkTmpfileLinkProc(b *testing.B) {
	benchTmpfile(b, func(fd, d int, name string) error {
		return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), d, name, unix.AT_SYMLINK_FOLLOW)
	})
}

func BenchmarkDirect(b *testing.B) {
	d := dir(b)
	for i := 0; i < b.N; i++ {
		n := "f" + strconv.Itoa(i)
		fd, err := unix.Openat(d, n, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC, 0600)
		if err != nil {
			b.Fatal(err)
		}
		unix.Pwrite(fd, buf, 0)
		unix.Close(fd)
	}
}

// The whole sequence kerf's receiver makes for a new small file (the
// final name's lstat, O_EXCL create, lock, identity, still-named check,
// write, mode, time, fsync, still-ours check, rename, close: 12 calls),
// against the same file received unnamed and linked into place, where
// nobody else can reach it, so that no lock or name check is needed (7
// calls and, where the directory may hold the name, the lstat: 8).
func BenchmarkKerfSequence(b *testing.B) {
	d := dir(b)
	var st unix.Stat_t
	ts := []unix.Timespec{{Sec: 1e9}, {Sec: 1e9}}
	for i := 0; i < b.N; i++ {
		n := "f" + strconv.Itoa(i)
		t := "." + n + ".kerf-part"
		unix.Fstatat(d, n, &st, unix.AT_SYMLINK_NOFOLLOW)
		fd, err := unix.Openat(d, t, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0600)
		if err != nil {
			b.Fatal(err)
		}
		unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		unix.Fstat(fd, &st)
		unix.Fstatat(d, t, &st, unix.AT_SYMLINK_NOFOLLOW)
		unix.Pwrite(fd, buf, 0)
		unix.Fchmod(fd, 0644)
		unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH)
		unix.Fsync(fd)
		unix.Fstatat(d, t, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err := unix.Renameat(d, t, d, n); err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}

// benchUnnamedSequence is kerf's unnamed receive of a small file:
// with lstat, the final name looked at first; with chmod, the file
// created 0600 and given its mode after (without, created with the mode
// it keeps); with emptyPath, linked by its descriptor (AT_EMPTY_PATH)
// rather than through /proc.
func benchUnnamedSequence(b *testing.B, lstat, chmod, emptyPath bool) {
	d := dir(b)
	var st unix.Stat_t
	ts := []unix.Timespec{{Sec: 1e9}, {Sec: 1e9}}
	mode := uint32(0644)
	if chmod {
		mode = 0600
	}
	for i := 0; i < b.N; i++ {
		n := "f" + strconv.Itoa(i)
		if lstat {
			unix.Fstatat(d, n, &st, unix.AT_SYMLINK_NOFOLLOW)
		}
		fd, err := unix.Openat(d, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, mode)
		if err != nil {
			b.Fatal(err)
		}
		unix.Pwrite(fd, buf, 0)
		if chmod {
			unix.Fchmod(fd, 0644)
		}
		unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH)
		unix.Fsync(fd)
		if emptyPath {
			err = unix.Linkat(fd, "", d, n, unix.AT_EMPTY_PATH)
		} else {
			err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), d, n, unix.AT_SYMLINK_FOLLOW)
		}
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}

func BenchmarkUnnamedSequence(b *testing.B)      { benchUnnamedSequence(b, false, true, false) }
func BenchmarkUnnamedSequenceLstat(b *testing.B) { benchUnnamedSequence(b, true, true, false) }

// What the link by descriptor saves, and with it the mode kept from the
// creation (the twenty-ninth session's 5 calls).
func BenchmarkUnnamedSequenceEmptyPath(b *testing.B) { benchUnnamedSequence(b, false, true, true) }
func BenchmarkUnnamedSequenceLean(b *testing.B)      { benchUnnamedSequence(b, false, false, true) }
