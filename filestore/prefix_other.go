//go:build !linux

package filestore

// Elsewhere no prefix is recorded: a partial is trusted up to its first
// hole (see prefix_linux.go).
func (t *tempFile) setPrefix(int64) {}

func (t *tempFile) takePrefix() (int64, bool) { return 0, false }

func (t *tempFile) clearPrefix() {}
