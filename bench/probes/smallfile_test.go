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
