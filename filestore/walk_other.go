//go:build !linux

package filestore

import (
	"io/fs"
	"os"
)

// readDirEntries reads the entries of the open directory f.
func readDirEntries(f *os.File) ([]fs.DirEntry, error) { return f.ReadDir(-1) }
