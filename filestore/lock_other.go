//go:build !unix

package filestore

import "os"

// lockPart is a no-op where flock is not available.
func lockPart(f *os.File) (bool, error) { return true, nil }
