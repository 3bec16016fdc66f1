package kermit

import (
	"io/fs"
	"syscall"
	"time"
)

func sysChangeTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Unix())
	}
	return time.Time{}
}

func sysStatus(fi fs.FileInfo) FileStatus {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return FileStatus{Dev: uint64(st.Dev), Ino: st.Ino, Links: uint64(st.Nlink), Mode: st.Mode, UID: st.Uid, GID: st.Gid, Known: true}
	}
	return FileStatus{}
}

func sysLinks(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Nlink)
	}
	return -1
}
