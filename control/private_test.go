package control_test

import (
	"os"
	"path/filepath"
	"testing"

	"kerf/control"
)

// A root holding the server's state directory or key, or being it, is
// found, through links too; one beside or below it is not.
func TestPrivateWithin(t *testing.T) {
	top := t.TempDir()
	state := filepath.Join(top, "home/.config/kerf/server")
	os.MkdirAll(state, 0o700)
	os.MkdirAll(filepath.Join(top, "srv"), 0o755)
	os.Symlink(filepath.Join(top, "home"), filepath.Join(top, "homelink"))
	os.MkdirAll(filepath.Join(top, "home2"), 0o755)
	cases := []struct {
		root string
		want bool
	}{
		{top, true},
		{filepath.Join(top, "home"), true},
		{filepath.Join(top, "home") + "/", true},
		{filepath.Join(top, "homelink"), true}, // a link to a root that holds it
		{state, true},
		{filepath.Join(top, "srv"), false},
		{filepath.Join(top, "home2"), false}, // a name that begins alike
		{filepath.Join(state, "sub"), false}, // inside it: it is not inside the root
		{"/", true},
	}
	for _, tc := range cases {
		got := control.PrivateWithin(tc.root, []string{"", state}) != ""
		if got != tc.want {
			t.Errorf("PrivateWithin(%s) = %v, want %v", tc.root, got, tc.want)
		}
	}
	// A key file given by --key counts too, and a state directory not
	// made yet is found by where it will be.
	key := filepath.Join(top, "srv/keys/key.pem")
	if control.PrivateWithin(filepath.Join(top, "srv"), []string{key}) == "" {
		t.Error("a root holding the key file (not there yet) was not found")
	}
}
