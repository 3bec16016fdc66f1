// Package auth is who may use a kerf server and which server a client
// is talking to: the users file (password hashes, tokens, client key
// fingerprints, roots, read-only flags), the failed-login throttle, the
// server's TLS identity (key and self-signed certificate kept in its
// state directory), the client's own key for public-key login, and the
// client's known-hosts file that pins a server's key on first use.
//
// It does not speak any protocol and opens no connection: package
// control calls it during the TLS handshake and the Kermit REMOTE LOGIN.
package auth

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors of the users file. ErrLoginFailed is all a client ever learns:
// the server never says whether the name or the password was wrong.
var (
	ErrLoginFailed = errors.New("auth: login failed")
	ErrNoSuchUser  = errors.New("auth: no such user")
	ErrUserExists  = errors.New("auth: user already exists")
	ErrBadName     = errors.New("auth: bad user name (use 1-64 of A-Z a-z 0-9 . _ -, not starting with - or .)")
	ErrKeyExists   = errors.New("auth: the user already has this key")
	ErrNoSuchKey   = errors.New("auth: the user has no such key")
	ErrLastLogin   = errors.New("auth: that is the user's only way to log in")
)

// AnonymousNames are the login names that mean "anonymous" (as in FTP);
// an empty name means the same. They cannot be used for real users.
var AnonymousNames = []string{"anonymous", "ftp"}

// IsAnonymous reports whether a login name asks for anonymous access.
func IsAnonymous(name string) bool {
	if name == "" {
		return true
	}
	for _, a := range AnonymousNames {
		if strings.EqualFold(name, a) {
			return true
		}
	}
	return false
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$`) })

// CheckName reports whether name may be a user's name.
func CheckName(name string) error {
	if IsAnonymous(name) {
		// It fits the rule below: say why it is refused (QA).
		return reservedName(name)
	}
	if !nameRE().MatchString(name) {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	return nil
}

// reservedName is a name that fits the rule but means anonymous access:
// an ErrBadName that says so.
type reservedName string

func (r reservedName) Error() string {
	return fmt.Sprintf("auth: user name %q is reserved for anonymous access (serve --anonymous)", string(r))
}

func (r reservedName) Is(target error) bool { return target == ErrBadName }

// User is one entry of the users file.
type User struct {
	Name string `json:"name"`
	// Secret is an argon2id or bcrypt password hash, or a token hash
	// ("token-sha256:..."): the password is then the token itself. It
	// is empty for a user who logs in only with a key; no password
	// matches an empty Secret.
	Secret string `json:"secret"`
	// Keys are the fingerprints (Fingerprint) of the client keys that
	// may log in as this user without a password.
	Keys []string `json:"keys,omitempty"`
	// Root is the directory the user is confined to; empty means the
	// server's --root.
	Root     string `json:"root,omitempty"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

type usersFileData struct {
	Version int    `json:"version"`
	Users   []User `json:"users"`
}

// UsersFile is the server's users file. A server reads it again when it
// changes, so `kerf user add` takes effect without a restart.
type UsersFile struct {
	path string

	mu      sync.Mutex
	users   map[string]User
	modTime time.Time
	size    int64
	loaded  bool
	// seen: the file was there when last read (or at some read before).
	// A file missing from the start means no users (a fresh state
	// directory, a server for --anonymous only); one that goes missing
	// after it was seen is an error (ErrUsersFileGone), as a file that
	// cannot be read is, not "no users": every login then failed as
	// if its credentials were wrong (QA).
	seen bool
	// Protected: every reading first checks that the file and its
	// directory are still the server's alone (CheckStateProtected), as
	// kerf serve checks them at its start: a users file made writable by
	// others after the start (a chmod -R, a restored backup) was read as
	// it was rewritten, and gave the nobody user an account with a root
	// of its choosing (QA).
	Protected bool
}

// ErrUsersFileGone is the error of a users file that was there and is
// not any more (deleted or moved while a server uses it); errors.Is
// finds fs.ErrNotExist in it too.
var ErrUsersFileGone = errors.New("auth: the users file is gone")

// goneError is ErrUsersFileGone for the file at path, said in full.
type goneError struct{ path string }

func (e *goneError) Error() string {
	return fmt.Sprintf("auth: the users file %s was there and is not any more (deleted or moved?): no user can log in until it is back (kerf user add makes a new one), or the server is restarted without it", e.path)
}

func (e *goneError) Is(target error) bool {
	return target == ErrUsersFileGone || target == fs.ErrNotExist
}

// UsersFileName is the users file's name inside the state directory.
const UsersFileName = "users.json"

// OpenUsers returns the users file at path; a missing file has no users.
func OpenUsers(path string) (*UsersFile, error) {
	u := &UsersFile{path: path}
	if err := u.reload(); err != nil {
		return nil, err
	}
	return u, nil
}

// Path is the file's location.
func (u *UsersFile) Path() string { return u.path }

func (u *UsersFile) reload() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.reloadLocked()
}

func (u *UsersFile) reloadLocked() error {
	fi, err := os.Stat(u.path)
	if errors.Is(err, os.ErrNotExist) {
		if u.seen {
			// Its users are not known to be none: the last ones read
			// are not used either (a user removed before the file went
			// would still log in).
			u.users, u.loaded = map[string]User{}, false
			return &goneError{u.path}
		}
		u.users, u.loaded, u.modTime, u.size = map[string]User{}, true, time.Time{}, 0
		return nil
	}
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if u.loaded && fi.ModTime().Equal(u.modTime) && fi.Size() == u.size {
		return nil
	}
	if u.Protected {
		if err := CheckStateProtected(filepath.Dir(u.path)); err != nil {
			u.users, u.loaded = map[string]User{}, false
			return err
		}
	}
	b, err := os.ReadFile(u.path)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	// Strictly: a field misspelt by hand ("readonly" for read_only,
	// "dir" for root) would be dropped without a word, its user given
	// write access or the server's whole --root; and the next `kerf
	// user` command would rewrite the file without it (QA).
	//
	// Each user is decoded on its own, so that an error can say whose
	// entry it is in and on which line (QA ag: an unknown field was
	// named without either).
	var d struct {
		Version int               `json:"version"`
		Users   []json.RawMessage `json:"users"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		line, problem := jsonProblem(b, 0, err)
		return fmt.Errorf("auth: %s: %s%s", u.path, whereIn(line, ""), problem)
	}
	if dec.More() {
		return fmt.Errorf("auth: %s: more than one JSON value", u.path)
	}
	if d.Version != 1 {
		return fmt.Errorf("auth: %s: version %d (this kerf reads version 1; is it a users file?)", u.path, d.Version)
	}
	m := make(map[string]User, len(d.Users))
	from, next := 0, 0 // where the entry begins in b, and where the next may
	for i, raw := range d.Users {
		// A RawMessage is the file's text as it is: found in b after
		// the entry before it.
		if j := bytes.Index(b[next:], raw); j >= 0 {
			from, next = next+j, next+j+len(raw)
		}
		var e User
		ud := json.NewDecoder(bytes.NewReader(raw))
		ud.DisallowUnknownFields()
		if err := ud.Decode(&e); err != nil {
			var named struct{ Name string }
			json.Unmarshal(raw, &named)
			if named.Name == "" {
				named.Name = fmt.Sprintf("number %d", i+1)
			}
			line, problem := jsonProblem(b, from, err)
			return fmt.Errorf("auth: %s: %s%s", u.path, whereIn(line, named.Name), problem)
		}
		// The entry's first line, for the problems found in its values.
		where := whereIn(lineAt(b, from), e.Name)
		if err := CheckName(e.Name); err != nil {
			return fmt.Errorf("auth: %s: %s%w", u.path, whereIn(lineAt(b, from), ""), err)
		}
		if err := CheckSecret(e.Secret); err != nil {
			// Found here, the server's trouble (logged, not throttled),
			// not a login that fails like a wrong password (QA).
			return fmt.Errorf("auth: %s: %s%w", u.path, where, err)
		}
		if e.Root != "" && !filepath.IsAbs(e.Root) {
			// Relative to wherever the server was started: not meant.
			return fmt.Errorf("auth: %s: %sroot %q is not an absolute path", u.path, where, e.Root)
		}
		if _, dup := m[e.Name]; dup {
			// Which of two entries counts is no choice to make silently
			// (the last one did: a read-only entry then a writable one).
			return fmt.Errorf("auth: %s: %sthe user is listed twice", u.path, where)
		}
		var err error
		if e.Keys, err = checkKeys(e.Keys); err != nil {
			return fmt.Errorf("auth: %s: %s%w", u.path, where, err)
		}
		m[e.Name] = e
	}
	u.users, u.loaded, u.modTime, u.size, u.seen = m, true, fi.ModTime(), fi.Size(), true
	return nil
}

// jsonProblem says err, an error decoding the JSON text in b from at,
// without Go's names for the types, and the line it is on (0: not
// known).
func jsonProblem(b []byte, at int, err error) (line int, problem string) {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		// (Go's words alone: "unexpected EOF", QA.)
		return 0, "the file ends before its JSON does (cut short, or a bracket or brace not closed)"
	case errors.As(err, &se):
		return lineAt(b, at+int(se.Offset)), se.Error()
	case errors.As(err, &te):
		return lineAt(b, at+int(te.Offset)), fmt.Sprintf("%q must be a %s, not a %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		// Go gives no offset: the field is looked for as a key.
		if loc := regexp.MustCompile(regexp.QuoteMeta(strconv.Quote(m[1])) + `\s*:`).FindIndex(b[min(at, len(b)):]); loc != nil {
			line = lineAt(b, at+loc[0])
		}
		return line, fmt.Sprintf("unknown field %q", m[1])
	}
	return 0, err.Error()
}

// whereIn says where in a file a problem is: "line 3, user bob", as known.
func whereIn(line int, user string) string {
	var w []string
	if line > 0 {
		w = append(w, fmt.Sprintf("line %d", line))
	}
	if user != "" {
		w = append(w, "user "+user)
	}
	if len(w) == 0 {
		return ""
	}
	return strings.Join(w, ", ") + ": "
}

// unknownField is encoding/json's error for a field no struct has.
var unknownField = regexp.MustCompile(`^json: unknown field "(.*)"$`)

// lineAt is the line number (from 1) of offset off in b.
func lineAt(b []byte, off int) int {
	return 1 + bytes.Count(b[:max(0, min(off, len(b)))], []byte("\n"))
}

// jsonKind names a Go kind as JSON does.
func jsonKind(k string) string {
	switch k {
	case "bool":
		return "boolean (true or false)"
	case "string":
		return "string"
	case "slice", "array":
		return "list"
	case "struct", "map":
		return "object"
	}
	return "number"
}

// Authenticate checks a name and password (or token). Any failure,
// whatever its cause, is ErrLoginFailed, and takes about as long as a
// wrong password.
func (u *UsersFile) Authenticate(name, password string) (User, error) {
	u.mu.Lock()
	err := u.reloadLocked()
	e, ok := u.users[name]
	u.mu.Unlock()
	if err != nil {
		return User{}, err
	}
	if !ok || e.Secret == "" {
		// An unknown user, or one who logs in only with a key: no
		// password matches, at the cost of a wrong one.
		verifyDummy(password)
		return User{}, ErrLoginFailed
	}
	match, err := Verify(e.Secret, password)
	if err != nil || !match {
		if strings.HasPrefix(e.Secret, prefixToken) {
			// A token is checked in microseconds, an unknown name at
			// the cost of a password hash: a wrong token takes as long,
			// or the time would tell which names have tokens (QA).
			verifyDummy(password)
		}
		return User{}, ErrLoginFailed
	}
	return e, nil
}

// AuthenticateKey checks that the client key with this fingerprint may
// log in as name. Any failure is ErrLoginFailed. It hashes nothing, so
// it costs microseconds whatever the cause; the fingerprints are
// compared in constant time.
func (u *UsersFile) AuthenticateKey(name, fingerprint string) (User, error) {
	u.mu.Lock()
	err := u.reloadLocked()
	e, ok := u.users[name]
	u.mu.Unlock()
	if err != nil {
		return User{}, err
	}
	fp, fpErr := CheckFingerprint(fingerprint)
	match := 0
	for _, k := range e.Keys {
		match |= subtle.ConstantTimeCompare([]byte(k), []byte(fp))
	}
	if !ok || fpErr != nil || match != 1 {
		return User{}, ErrLoginFailed
	}
	return e, nil
}

// Lookup returns name's entry as the file holds it now (read again if
// it changed), and whether there is one.
func (u *UsersFile) Lookup(name string) (User, bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.reloadLocked(); err != nil {
		return User{}, false, err
	}
	e, ok := u.users[name]
	return e, ok, nil
}

// checkKeys checks and normalizes a user's key fingerprints, dropping
// repeats.
func checkKeys(keys []string) ([]string, error) {
	var out []string
	for _, k := range keys {
		fp, err := CheckFingerprint(k)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, fp) {
			out = append(out, fp)
		}
	}
	return out, nil
}

// List returns the users sorted by name.
func (u *UsersFile) List() ([]User, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.reloadLocked(); err != nil {
		return nil, err
	}
	out := make([]User, 0, len(u.users))
	for _, e := range u.users {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Add adds a new user.
func (u *UsersFile) Add(e User) error {
	if err := CheckName(e.Name); err != nil {
		return err
	}
	var err error
	if e.Keys, err = checkKeys(e.Keys); err != nil {
		return err
	}
	if e.Secret == "" && len(e.Keys) == 0 {
		return errors.New("auth: a user needs a password, a token or a key")
	}
	return u.update(func(m map[string]User) error {
		if _, ok := m[e.Name]; ok {
			return fmt.Errorf("%w: %s", ErrUserExists, e.Name)
		}
		m[e.Name] = e
		return nil
	})
}

// SetSecret replaces a user's password hash or token.
func (u *UsersFile) SetSecret(name, secret string) error {
	return u.updateUser(name, func(e *User) error {
		e.Secret = secret
		return nil
	})
}

// SetAccess changes a user's root (if root is not nil; "" is the
// server's --root) and read-only access (if readOnly is not nil),
// keeping its password and keys. A running server ends the user's
// sessions, which log in again under the new terms.
func (u *UsersFile) SetAccess(name string, root *string, readOnly *bool) error {
	return u.updateUser(name, func(e *User) error {
		if root != nil {
			e.Root = *root
		}
		if readOnly != nil {
			e.ReadOnly = *readOnly
		}
		return nil
	})
}

// AddKey lets the client key with this fingerprint log in as name.
func (u *UsersFile) AddKey(name, fingerprint string) error {
	fp, err := CheckFingerprint(fingerprint)
	if err != nil {
		return err
	}
	return u.updateUser(name, func(e *User) error {
		if slices.Contains(e.Keys, fp) {
			return fmt.Errorf("%w: %s %s", ErrKeyExists, name, fp)
		}
		e.Keys = append(slices.Clone(e.Keys), fp)
		return nil
	})
}

// RemoveKey withdraws a key from name. The last key of a user without a
// password cannot be removed (ErrLastLogin): remove the user instead.
func (u *UsersFile) RemoveKey(name, fingerprint string) error {
	fp, err := CheckFingerprint(fingerprint)
	if err != nil {
		return err
	}
	return u.updateUser(name, func(e *User) error {
		i := slices.Index(e.Keys, fp)
		if i < 0 {
			return fmt.Errorf("%w: %s %s", ErrNoSuchKey, name, fp)
		}
		if len(e.Keys) == 1 && e.Secret == "" {
			return fmt.Errorf("%w: %s has no password; set one first, or remove the user", ErrLastLogin, name)
		}
		e.Keys = slices.Delete(slices.Clone(e.Keys), i, i+1)
		return nil
	})
}

// Remove deletes a user.
func (u *UsersFile) Remove(name string) error {
	return u.update(func(m map[string]User) error {
		if _, ok := m[name]; !ok {
			return fmt.Errorf("%w: %s", ErrNoSuchUser, name)
		}
		delete(m, name)
		return nil
	})
}

// updateUser applies f to user name's entry (ErrNoSuchUser if there is
// none) and writes the file.
func (u *UsersFile) updateUser(name string, f func(*User) error) error {
	return u.update(func(m map[string]User) error {
		e, ok := m[name]
		if !ok {
			return fmt.Errorf("%w: %s", ErrNoSuchUser, name)
		}
		if err := f(&e); err != nil {
			return err
		}
		m[name] = e
		return nil
	})
}

// update applies f and writes the file atomically (mode 0600). Two
// `kerf user` commands may run at once: the file is read and replaced
// under a lock, so that neither loses the other's change.
func (u *UsersFile) update(f func(map[string]User) error) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	unlock, err := lockFile(u.path)
	if err != nil {
		return err
	}
	defer unlock()
	u.loaded = false // always start from what is on disk
	// A file gone is made anew, as a `kerf user add` in a process of
	// its own makes it (which is how a server's lost file is put back).
	u.seen = false
	if err := u.reloadLocked(); err != nil {
		return err
	}
	m := make(map[string]User, len(u.users))
	for k, v := range u.users {
		m[k] = v
	}
	if err := f(m); err != nil {
		return err
	}
	d := usersFileData{Version: 1}
	for _, e := range m {
		d.Users = append(d.Users, e)
	}
	sort.Slice(d.Users, func(i, j int) bool { return d.Users[i].Name < d.Users[j].Name })
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(u.path, append(b, '\n'), 0o600); err != nil {
		return err
	}
	u.loaded = false
	return u.reloadLocked()
}
