//go:build !linux

package filestore

import "errors"

// Elsewhere no prefix is recorded: a partial is trusted up to its first
// hole (see prefix_linux.go).
func (t *tempFile) setPrefix(int64) {}

func (t *tempFile) takePrefix() (int64, bool, bool) { return 0, false, false }

func (t *tempFile) clearPrefix() {}

func (t *tempFile) setKept(int64, [][2]int64) error { return errors.ErrUnsupported }

func (t *tempFile) takeKept() (int64, [][2]int64, bool) { return 0, nil, false }

func (t *tempFile) clearKept() {}

func (t *tempFile) punchHole(int64, int64) error { return errors.ErrUnsupported }
