package kermit

import (
	"fmt"
	"testing"
	"time"
)

// A file given a removed file's inode number since, of its size and
// modification time (cp -p of it, say), is not the file removed: its
// change time tells (review 52: ext4 reuses a number at once). And the
// record forgets its oldest past movedCap, in constant time.
func TestMovedFilesTellsAReusedInode(t *testing.T) {
	var m MovedFiles
	st := FileStatus{Dev: 1, Ino: 2, Known: true}
	mtime := time.Unix(1_700_000_000, 0)
	ctime := time.Unix(1_700_000_100, 5)
	m.Note(st, 10, mtime, ctime, "a", "/t/a")
	if _, ok := m.earlier(st, 10, mtime, ctime); !ok {
		t.Error("the file removed is not known")
	}
	if _, ok := m.earlier(st, 10, mtime, ctime.Add(time.Millisecond)); ok {
		t.Error("another file of its inode number, size and time is taken for it")
	}
	if _, ok := m.earlier(FileStatus{Dev: 1, Ino: 3, Known: true}, 10, mtime, ctime); ok {
		t.Error("another inode is taken for it")
	}
	if m.From("/t/a") == nil || m.From("/t/b") != nil {
		t.Error("From: the path moved, or another")
	}
	for i := range movedCap {
		m.Note(FileStatus{Dev: 1, Ino: uint64(100 + i), Known: true}, 1, mtime, ctime, "x", fmt.Sprintf("/t/x%d", i))
	}
	if _, ok := m.earlier(st, 10, mtime, ctime); ok || m.From("/t/a") != nil {
		t.Error("the oldest is remembered past movedCap")
	}
	if len(m.byID) != movedCap || len(m.byPath) != movedCap {
		t.Errorf("%d inodes, %d paths remembered; want %d", len(m.byID), len(m.byPath), movedCap)
	}
	var none *MovedFiles
	none.Note(st, 1, mtime, ctime, "a", "/t/a")
	if _, ok := none.earlier(st, 1, mtime, ctime); ok || none.From("/t/a") != nil {
		t.Error("a nil record knows something")
	}
}
