package kermit

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestPeerText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "removeat", Path: "nonexist.txt", Err: fs.ErrNotExist}, "nonexist.txt: file does not exist"},
		{fmt.Errorf("filestore: %w", &fs.PathError{Op: "statat", Path: "nonexist", Err: errors.New("no such file or directory")}), "nonexist: no such file or directory"},
		{fmt.Errorf("remote cd: filestore: %w", &fs.PathError{Op: "openat", Path: "a b/c", Err: errors.New("not a directory")}), "remote cd: a b/c: not a directory"},
		{errors.New("filestore: x exists and is not a directory"), "x exists and is not a directory"},
		{errors.New("the file open.txt is busy"), "the file open.txt is busy"},
	} {
		if got := peerText(tc.err); got != tc.want {
			t.Errorf("peerText(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
