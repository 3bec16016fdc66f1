//go:build !linux

package filestore_test

import (
	"os"
	"testing"
)

// unprivileged runs f with the permission checks of a server that is not
// root; dropping root's capabilities is Linux's, so elsewhere root skips.
func unprivileged(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("running as root: permission checks cannot be dropped on this system")
	}
	f()
}
