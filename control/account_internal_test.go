package control

import (
	"errors"
	"testing"

	"kerf/auth"
	"kerf/kermit"
)

type fakeUsers map[string]auth.User

func (f fakeUsers) Lookup(name string) (auth.User, bool, error) {
	if name == "broken" {
		return auth.User{}, false, errors.New("unreadable")
	}
	u, ok := f[name]
	return u, ok, nil
}

// What ends a session logged in with an entry of the users file, and
// what does not.
func TestAccountGone(t *testing.T) {
	const key = "sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"
	const other = "sha256:" + "cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34"
	base := auth.User{Name: "alice", Secret: "hash1", Keys: []string{key}, Root: "/srv/a"}
	with := func(f func(*auth.User)) auth.User {
		u := base
		u.Keys = append([]string(nil), base.Keys...)
		f(&u)
		return u
	}
	for _, c := range []struct {
		name   string
		method string
		now    *auth.User // nil: removed
		gone   bool
	}{
		{"unchanged, password", "password", &base, false},
		{"unchanged, key", "key", &base, false},
		{"removed", "password", nil, true},
		{"read-only now", "password", ptr(with(func(u *auth.User) { u.ReadOnly = true })), true},
		{"root moved", "key", ptr(with(func(u *auth.User) { u.Root = "/srv/b" })), true},
		{"password changed, password login", "password", ptr(with(func(u *auth.User) { u.Secret = "hash2" })), true},
		{"password changed, key login", "key", ptr(with(func(u *auth.User) { u.Secret = "hash2" })), false},
		{"key removed, key login", "key", ptr(with(func(u *auth.User) { u.Keys = []string{other} })), true},
		{"key removed, password login", "password", ptr(with(func(u *auth.User) { u.Keys = nil })), false},
		{"another key added", "key", ptr(with(func(u *auth.User) { u.Keys = append(u.Keys, other) })), false},
	} {
		users := fakeUsers{}
		if c.now != nil {
			users["alice"] = *c.now
		}
		was := base
		f := &sessionFS{account: &was, method: c.method, clientKey: key}
		if why := f.accountGone(users); (why != "") != c.gone {
			t.Errorf("%s: accountGone = %q, want gone %v", c.name, why, c.gone)
		}
	}
	// Anonymous, and a users file that cannot be read: the session stands.
	if why := (&sessionFS{}).accountGone(fakeUsers{}); why != "" {
		t.Errorf("anonymous: %q", why)
	}
	broken := auth.User{Name: "broken"}
	if why := (&sessionFS{account: &broken, method: "password"}).accountGone(fakeUsers{}); why != "" {
		t.Errorf("unreadable users file: %q", why)
	}
}

func ptr[T any](v T) *T { return &v }

// A session is accountless (its skip lists share the anonymous bound)
// for an anonymous login, not a user's.
func TestSessionAccountless(t *testing.T) {
	var _ kermit.Accountless = (*sessionFS)(nil)
	for user, want := range map[string]bool{"": true, "anonymous": true, "ftp": true, "alice": false} {
		if got := (&sessionFS{user: user}).Accountless(); got != want {
			t.Errorf("user %q: accountless %v, want %v", user, got, want)
		}
	}
}
