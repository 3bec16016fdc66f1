package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

// What a client is told names the file and the cause, not the system
// call, and still matches the cause.
func TestClearErrDropsSyscallNames(t *testing.T) {
	for _, tc := range []struct {
		in   error
		want string
	}{
		{&fs.PathError{Op: "statat", Path: "sub/x.bin", Err: fs.ErrNotExist}, "kerf: sub/x.bin: file does not exist"},
		{&os.LinkError{Op: "renameat", Old: "a", New: "b", Err: fs.ErrPermission}, "kerf: a -> b: permission denied"},
		{errors.New("filestore: a exists and is not a regular file"), "filestore: a exists and is not a regular file"},
		// What was added after the cause stays (QA aj: the inode hint).
		{fmt.Errorf("filestore: %w (the file system has no inodes left)", &fs.PathError{Op: "openat", Path: "f", Err: syscall.ENOSPC}), "kerf: f: no space left on device (the file system has no inodes left)"},
		// Another error's text after it is not: its own calls and paths.
		{fmt.Errorf("%w: %v", &fs.PathError{Op: "openat", Path: "f", Err: syscall.EACCES}, &fs.PathError{Op: "open", Path: "/srv/state/x", Err: syscall.EIO}), "kerf: f: permission denied"},
	} {
		got := clearErr(tc.in, "x")
		if got.Error() != tc.want {
			t.Errorf("clearErr(%v) = %q, want %q", tc.in, got, tc.want)
		}
		var pe *fs.PathError
		if errors.As(tc.in, &pe) && !errors.Is(got, pe.Err) {
			t.Errorf("clearErr(%v) lost its cause", tc.in)
		}
	}
}
