package auth

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A users file that was there and is gone (deleted or moved while a
// server uses it) is an error naming it, as an unreadable one is, not
// "no users": every login then failed as if the key or password were
// wrong (QA). A file missing from the start is no users: a fresh state
// directory, a server for --anonymous only.
func TestUsersFileGone(t *testing.T) {
	fp := "sha256:" + strings.Repeat("ab", 32)
	alice := User{Name: "alice", Secret: HashPassword("pw", cheap), Keys: []string{fp}}
	// add writes alice into the file at path through a UsersFile of its
	// own, as `kerf user add` does beside a server.
	add := func(t *testing.T, path string) {
		t.Helper()
		w, err := OpenUsers(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(alice); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		// setup makes the file's history up to the reads checked, given
		// the server's UsersFile opened at its start.
		setup    func(t *testing.T, path string) *UsersFile
		wantGone bool
	}{
		{"never there", func(t *testing.T, path string) *UsersFile {
			return mustOpen(t, path)
		}, false},
		{"there at the start, then deleted", func(t *testing.T, path string) *UsersFile {
			add(t, path)
			u := mustOpen(t, path)
			must(t, os.Remove(path))
			return u
		}, true},
		{"made after the start, then deleted", func(t *testing.T, path string) *UsersFile {
			u := mustOpen(t, path)
			add(t, path)
			if _, err := u.Authenticate("alice", "pw"); err != nil {
				t.Fatalf("alice, added after the start: %v", err)
			}
			must(t, os.Remove(path))
			return u
		}, true},
		{"moved away", func(t *testing.T, path string) *UsersFile {
			add(t, path)
			u := mustOpen(t, path)
			must(t, os.Rename(path, path+".bak"))
			return u
		}, true},
		{"a link whose target was deleted", func(t *testing.T, path string) *UsersFile {
			real := filepath.Join(t.TempDir(), "users.json")
			add(t, real)
			must(t, os.Symlink(real, path))
			u := mustOpen(t, path)
			must(t, os.Remove(real))
			return u
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), UsersFileName)
			u := tc.setup(t, path)
			_, errPw := u.Authenticate("alice", "pw")
			_, errKey := u.AuthenticateKey("alice", fp)
			_, _, errLookup := u.Lookup("alice")
			_, errList := u.List()
			for what, err := range map[string]error{"Authenticate": errPw, "AuthenticateKey": errKey, "Lookup": errLookup, "List": errList} {
				if !tc.wantGone {
					if err != nil && !errors.Is(err, ErrLoginFailed) {
						t.Errorf("%s: %v, want no users (ErrLoginFailed for a login)", what, err)
					}
					continue
				}
				if !errors.Is(err, ErrUsersFileGone) || !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrLoginFailed) || !strings.Contains(err.Error(), path) {
					t.Errorf("%s: %v, want ErrUsersFileGone naming %s", what, err, path)
				}
			}
			if !tc.wantGone {
				return
			}
			// Put back (kerf user add in a process of its own): read
			// again, logins work.
			if _, err := os.Lstat(path); err == nil {
				must(t, os.Remove(path))
			}
			add(t, path)
			if _, err := u.Authenticate("alice", "pw"); err != nil {
				t.Errorf("after the file was made again: %v", err)
			}
			// A change through the server's own UsersFile makes it anew
			// too, with what it is given.
			must(t, os.Remove(path))
			if err := u.Add(User{Name: "bob", Secret: HashPassword("b", cheap)}); err != nil {
				t.Errorf("Add after the file went: %v", err)
			}
			if list, err := u.List(); err != nil || len(list) != 1 || list[0].Name != "bob" {
				t.Errorf("List after Add made the file anew: %v, %v", list, err)
			}
		})
	}
}

func mustOpen(t *testing.T, path string) *UsersFile {
	t.Helper()
	u, err := OpenUsers(path)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
