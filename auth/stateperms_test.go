package auth

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A state directory, users file or key that others may write (or a key
// others may read) stops the server; the modes kerf makes pass.
func TestCheckStateProtected(t *testing.T) {
	cases := []struct {
		name string
		path string // relative to the state directory
		mode os.FileMode
		bad  bool
	}{
		{"as made", "", 0o700, false},
		{"directory readable by all", "", 0o755, false},
		{"directory writable by all", "", 0o777, true},
		{"directory writable by its group", "", 0o770, true},
		{"users file writable by all", UsersFileName, 0o666, true},
		{"users file readable by all", UsersFileName, 0o644, false},
		{"key readable by all", KeyFileName, 0o644, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			if _, _, err := LoadOrCreateIdentity(dir); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, UsersFileName), []byte(`{"version":1,"users":[]}`), 0o600)
			if err := os.Chmod(filepath.Join(dir, tc.path), tc.mode); err != nil {
				t.Fatal(err)
			}
			err := CheckStateProtected(dir)
			if bad := err != nil; bad != tc.bad {
				t.Errorf("CheckStateProtected: %v; want refused: %v", err, tc.bad)
			}
			if err != nil && !errors.Is(err, ErrStateUnprotected) && !errors.Is(err, ErrKeyUnprotected) {
				t.Errorf("error %v is neither ErrStateUnprotected nor ErrKeyUnprotected", err)
			}
		})
	}
	if os.Geteuid() == 0 {
		dir := t.TempDir()
		os.Chown(dir, 65534, 65534)
		if err := CheckStateProtected(dir); !errors.Is(err, ErrStateUnprotected) {
			t.Errorf("a state directory of nobody's: %v", err)
		}
	}
}
