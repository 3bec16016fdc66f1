package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isKernelFile reports whether p is a regular file of /proc or /sys,
// whose size says nothing of what it holds (0 in /proc, 4096 in /sys):
// read as a pipe is, to its end (QA: `kerf send /proc/cpuinfo` stored
// an empty file).
func isKernelFile(p string) bool {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	var st unix.Statfs_t
	if unix.Statfs(p, &st) != nil {
		return false
	}
	return st.Type == unix.PROC_SUPER_MAGIC || st.Type == unix.SYSFS_MAGIC
}
