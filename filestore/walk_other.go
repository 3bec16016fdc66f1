//go:build !linux

package filestore

import "io/fs"

// readDirEntries reads the entries of the open directory d.
func readDirEntries(d *openDir) ([]fs.DirEntry, error) { return d.f.ReadDir(-1) }
