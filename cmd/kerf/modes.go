package main

import (
	"fmt"
	"os"

	"kerf/filestore"
	"kerf/kermit"
)

// noteModesNotKept says, once for the command, that files or
// directories were stored without the permission bits they came with
// because the file system here refuses them (a FAT stick): they are
// stored, as cp -a stores them, and the user hears why their modes
// differ.
func noteModesNotKept(stores ...kermit.Store) {
	var n int64
	var first error
	for _, st := range stores {
		var d *filestore.Dir
		switch st := st.(type) {
		case *filestore.Dir:
			d = st
		case *asNameStore:
			d = st.Dir
		}
		if d == nil {
			continue
		}
		if k, err := d.ModesNotKept(); k > 0 {
			n += k
			if first == nil {
				first = err
			}
		}
	}
	if n > 0 {
		fmt.Fprintf(os.Stderr, "kerf: warning: %d file(s) or directories stored without the permission bits they were sent with, which this file system does not keep (%v); their data is whole\n", n, first)
	}
}
