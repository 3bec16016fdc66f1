package kermit

import (
	"io/fs"
	"time"
)

// ChangeTimeOf is fi's status-change time (ctime), or zero where it is
// not known. Any write moves it, and nothing but the kernel sets it: a
// file rewritten in place and given back its old size and modification
// time (touch -r) still shows the change (OutgoingFile.ChangeTime). A
// FileInfo of its own may say with a ChangeTime method; else the
// system's stat says, where it has one (sysChangeTime).
func ChangeTimeOf(fi fs.FileInfo) time.Time {
	if ct, ok := fi.(interface{ ChangeTime() time.Time }); ok {
		return ct.ChangeTime()
	}
	return sysChangeTime(fi)
}

// FileStatus is what else moves a file's ctime without touching its
// data: its link count, permission bits and owner; and which file it is
// (device and inode). Known is false where they are not known.
type FileStatus struct {
	Dev, Ino uint64
	Links    uint64
	Mode     uint32 // st_mode, type and permission bits
	UID, GID uint32
	Known    bool
}

// StatusOf is fi's FileStatus: from a Status method of its own, else
// from the system's stat where it has one.
func StatusOf(fi fs.FileInfo) FileStatus {
	if s, ok := fi.(interface{ Status() FileStatus }); ok {
		return s.Status()
	}
	return sysStatus(fi)
}

// removedWhileOpen reports whether fi, of an open file, says the file
// has no name left (its link count is 0), where that is known.
func removedWhileOpen(fi fs.FileInfo) bool {
	if l, ok := fi.(interface{ Links() uint64 }); ok {
		return l.Links() == 0
	}
	return sysLinks(fi) == 0
}

// ChangedSinceSent says why fi, found at a sent file's name, is not
// that file unchanged, or "" if it is: a send's and a server's
// --remove-source-files remove only the very file sent. It was size
// bytes of mtime, and, where known (non-zero), the file st and of
// change time ctime.
func ChangedSinceSent(fi fs.FileInfo, size int64, mtime time.Time, st FileStatus, ctime time.Time) string {
	switch {
	case !fi.Mode().IsRegular():
		return "not a regular file now"
	case fi.Size() != size || !fi.ModTime().Equal(mtime):
		return "changed since it was sent"
	}
	if now := StatusOf(fi); st.Known && now.Known && (now.Dev != st.Dev || now.Ino != st.Ino) {
		return "replaced since it was sent"
	}
	if !ctime.IsZero() && !ChangeTimeOf(fi).Equal(ctime) && !onlyLinksChanged(st, StatusOf(fi)) {
		return "changed since it was sent"
	}
	return ""
}

// onlyLinksChanged reports whether the status now differs from was, as
// far as it shows, only in the file's link count, which moves its ctime
// without touching its data: a link made to it (a snapshot tool
// hard-linking the tree being sent), or one of its other names removed
// (a --remove-source-files of two hard links: removing the first moved
// the second's ctime; QA r). A changed mode or owner does not clear it:
// cp -p and rsync -a rewrite a file in place and give it back its time
// along with a mode and owner (review: a mix of old and new bytes was
// stored).
func onlyLinksChanged(was, now FileStatus) bool {
	return was.Known && now.Known && now.Links != was.Links && now.Links > 0 &&
		now.Dev == was.Dev && now.Ino == was.Ino &&
		now.Mode == was.Mode && now.UID == was.UID && now.GID == was.GID
}
