//go:build !linux

package kermit

import (
	"io/fs"
	"time"
)

// sysChangeTime is not known here (see ctime_linux.go).
func sysChangeTime(fs.FileInfo) time.Time { return time.Time{} }

// sysLinks is not known here: -1.
func sysLinks(fs.FileInfo) int64 { return -1 }

// sysStatus is not known here (see ctime_linux.go).
func sysStatus(fs.FileInfo) FileStatus { return FileStatus{} }
