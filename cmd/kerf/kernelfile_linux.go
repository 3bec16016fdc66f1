package main

import "golang.org/x/sys/unix"

// isKernelFile reports whether p is on /proc or /sys, whose files' sizes
// say nothing of what they hold (0 in /proc, 4096 in /sys): read as a
// pipe is, to its end (QA: `kerf send /proc/cpuinfo` stored an empty
// file).
func isKernelFile(p string) bool {
	var st unix.Statfs_t
	if unix.Statfs(p, &st) != nil {
		return false
	}
	return st.Type == unix.PROC_SUPER_MAGIC || st.Type == unix.SYSFS_MAGIC
}
