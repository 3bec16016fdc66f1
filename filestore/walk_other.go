//go:build !linux

package filestore

import (
	"io"
	"io/fs"
	"os"
)

// readDirEntries hands add the name and type of each entry of the open
// directory d, a batch at a time.
func readDirEntries(d *openDir, add func(name []byte, typ fs.FileMode) error) error {
	for {
		ents, err := d.f.ReadDir(1024)
		for _, e := range ents {
			if aerr := add([]byte(e.Name()), e.Type()); aerr != nil {
				return aerr
			}
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return &fs.PathError{Op: "readdirent", Path: d.rel, Err: err}
		}
		if len(ents) == 0 {
			return nil
		}
	}
}

// spillFile is a file for a big directory's runs, removed as soon as it
// is made.
func spillFile(dir string) (*os.File, error) { return namedSpillFile(dir) }
