//go:build !linux

package kermit

import (
	"io/fs"
	"time"
)

// ChangeTimeOf is fi's status-change time where fi says it (a
// ChangeTime method), else zero (see ctime_linux.go).
func ChangeTimeOf(fi fs.FileInfo) time.Time {
	if ct, ok := fi.(interface{ ChangeTime() time.Time }); ok {
		return ct.ChangeTime()
	}
	return time.Time{}
}
