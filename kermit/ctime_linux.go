package kermit

import (
	"io/fs"
	"syscall"
	"time"
)

// ChangeTimeOf is fi's status-change time (ctime), or zero where it is
// not known. Any write moves it, and nothing but the kernel sets it: a
// file rewritten in place and given back its old size and modification
// time (touch -r) still shows the change (OutgoingFile.ChangeTime). A
// FileInfo of its own may say with a ChangeTime method.
func ChangeTimeOf(fi fs.FileInfo) time.Time {
	if ct, ok := fi.(interface{ ChangeTime() time.Time }); ok {
		return ct.ChangeTime()
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	return time.Time{}
}
