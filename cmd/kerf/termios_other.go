//go:build !linux

package main

import "golang.org/x/sys/unix"

// The ioctls that read and set a terminal's modes (BSD and macOS names).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
