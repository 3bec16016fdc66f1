//go:build !linux

package filestore

func (h *dirHandle) openUnnamed(d *Dir, rel string) (*tempFile, error) {
	return nil, errNoTmpfile
}

func (h *dirHandle) linkFD(d *Dir, f *tempFile, name string) error {
	return errNoTmpfile
}
