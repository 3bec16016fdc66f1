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

// A server's users file (Protected) is checked at every reading, not
// only at the server's start: rewritten while others could write it,
// it is refused, every login with it, until its modes are the
// server's alone again (QA: made 0666 after the start, nobody's
// rewrite was read and its account used).
func TestUsersFileCheckedAtEveryReading(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, UsersFileName)
	setup, err := OpenUsers(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := setup.Add(User{Name: "alice", Secret: HashPassword("pw-alice", cheap)}); err != nil {
		t.Fatal(err)
	}
	u, err := OpenUsers(path)
	if err != nil {
		t.Fatal(err)
	}
	u.Protected = true
	if _, err := u.Authenticate("alice", "pw-alice"); err != nil {
		t.Fatalf("alice before: %v", err)
	}
	// Made writable by all, and rewritten (another user, as root here).
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := setup.Add(User{Name: "evil", Secret: HashPassword("pw-evil", cheap), Root: "/"}); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666) // (the rewrite may have set its own mode)
	for _, who := range [][2]string{{"evil", "pw-evil"}, {"alice", "pw-alice"}} {
		if _, err := u.Authenticate(who[0], who[1]); !errors.Is(err, ErrStateUnprotected) {
			t.Errorf("%s with the file writable by all: %v; want ErrStateUnprotected", who[0], err)
		}
	}
	// Its modes put right (chmod changes no content, nor its time).
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Authenticate("alice", "pw-alice"); err != nil {
		t.Errorf("alice once the file is the server's again: %v", err)
	}
	// Without Protected (the user commands, run by its owner), a
	// reading does not check.
	os.Chmod(path, 0o666)
	if _, err := OpenUsers(path); err != nil {
		t.Errorf("OpenUsers of a file writable by all, unprotected: %v", err)
	}
}
