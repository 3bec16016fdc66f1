package control

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"kerf/auth"
	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// Errors a client sees in E packets. A failed login never says whether
// the name or the password was wrong.
var (
	errLoginRequired = errors.New("kerf: login required (REMOTE LOGIN user password)")
	errLoginFailed   = errors.New("kerf: login failed")
	errThrottled     = errors.New("kerf: login throttled")
	errUsersBroken   = errors.New("kerf: login not possible now: the server cannot read its users file (its log says why)")
	errTooManyLogins = errors.New("kerf: too many failed logins on this connection: connect again to try again")
	errNoAnonymous   = errors.New("kerf: login failed (anonymous access is not enabled)")
	// errServerShort is a login refused for want of a resource the
	// server runs out of for a moment (open files): the client dials
	// again, as for a server at its session limit.
	errServerShort = errors.New("kerf: login not possible now: the server is out of open files, try again later")
	errReadOnly    = fmt.Errorf("kerf: %w", kermit.ErrReadOnly)
)

// Bounds on names a client may send.
const (
	// maxNameLen: a whole path. Not the system's 4,096 bytes: the tree
	// is reached a directory at a time, and its walks list and serve
	// deeper paths, which a client must be able to name (QA).
	maxNameLen    = maxSpecLen
	maxElementLen = 255 // one path element
)

// errTooLong is checkName's error for a name or element too long.
var errTooLong = errors.New("kerf: name too long")

// checkName refuses names no file should have: too long, or with
// control characters. A name need not be UTF-8: a Unix name is bytes (a
// tree written in Latin-1, say), and a GET -r serves such names, so a
// send, a GET by name and rm take them too, as rsync and scp do.
// filestore then refuses absolute paths, ".." and symlinks that leave
// the root.
func checkName(name string) error {
	if err := checkLength(name); err != nil {
		return err
	}
	for _, r := range name {
		// A byte that is not UTF-8 ranges as utf8.RuneError: not a
		// control character.
		if framing.IsControl(r) {
			return fmt.Errorf("%w: %q contains a control character", filestore.ErrUnsafeName, name)
		}
	}
	return nil
}

// checkLength is checkName's bounds alone: those of a name of an entry
// that is there, to remove or rename, which may hold a character no
// transfer stores (filestore's removing and renamingFrom: QA).
func checkLength(name string) error {
	if len(name) > maxNameLen {
		return fmt.Errorf("%w: name of %d bytes (at most %d)", errTooLong, len(name), maxNameLen)
	}
	for el := range strings.SplitSeq(name, "/") {
		if len(el) > maxElementLen {
			return fmt.Errorf("%w: name element of %d bytes (at most %d)", errTooLong, len(el), maxElementLen)
		}
	}
	return nil
}

// sessionFS is what one session's Kermit server serves: nothing until
// the client logs in (or anonymous access binds it to the server's root,
// read-only), then the user's root through filestore's os.Root. It is
// the kermit.Authorizer that gates every command.
type sessionFS struct {
	srv    *Server
	slot   *connSlot // its count against the session limits
	ip     net.IP
	raw    net.Conn
	secure bool
	// clientKey is the fingerprint of the key the TLS client presented
	// (and proved it holds), or "" (none, or a classic session).
	clientKey string
	log       *slog.Logger
	ctx       context.Context
	cancel    context.CancelFunc
	// cancelCause ends the session saying why (a take-over: Release).
	cancelCause context.CancelCauseFunc
	// live says how long the session has been silent, for another
	// session that wants a file this one holds (filestore.Holder).
	live atomic.Pointer[liveness]

	failures int
	// counted: the session logged in, and the server counts it
	// (sessionLoggedIn) until it ends. Only the session's goroutine
	// sets it.
	counted  bool
	lastUser string // the user of the last successful login
	lastPass []byte // and an HMAC of its password under passKey (a repeat is not hashed again)
	passKey  []byte // random, this session's: lastPass says nothing outside it

	mu   sync.Mutex // dir and user are read by the data-channel offer
	dir  *filestore.Dir
	user string
	// account is the users file's entry as the session logged in with
	// it, and method how ("password" or "key"): watchAccount ends the
	// session when the entry no longer lets it in. Unset for anonymous.
	account *auth.User
	method  string

	handshakeOver bool
}

var _ kermit.Authorizer = (*sessionFS)(nil)

func (f *sessionFS) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dir != nil {
		f.retire(f.dir, f.user)
		f.dir = nil
	}
}

// retire closes a tree the session is done with, first logging the
// files stored without their permission bits, which its file system
// refused (filestore.ModesNotKept: a FAT disk).
func (f *sessionFS) retire(d *filestore.Dir, user string) {
	if n, err := d.ModesNotKept(); n > 0 {
		f.log.Warn("files stored without the permission bits they were sent with: the file system refuses them", "user", user, "count", n, "err", err)
	}
	d.Close()
}

var _ filestore.Holder = (*sessionFS)(nil)

func (f *sessionFS) setLiveness(l *liveness) { f.live.Store(l) }

// LastMoved is when the session was last seen to move anything
// (filestore.Holder).
func (f *sessionFS) LastMoved() time.Time {
	now := time.Now()
	l := f.live.Load()
	if l == nil {
		return now
	}
	return l.movedAt(now)
}

// Release ends the session for another that takes over a file it holds
// (filestore.Holder): its files are kept for that one's resume. The log
// names the taker: a user may end another's session this way (only one
// silent for ServerConfig.TakeOverAfter).
func (f *sessionFS) Release(why string, by filestore.Holder) {
	attrs := []any{"why", why}
	if t, ok := by.(*sessionFS); ok {
		attrs = append(attrs, "by_peer", t.raw.RemoteAddr().String(), "by_user", t.userName())
	}
	f.log.Warn("session taken over", attrs...)
	f.cancelCause(fmt.Errorf("kerf: %s", why))
}

func (f *sessionFS) userName() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.user
}

// Accountless reports whether the session's login has no account of its
// own (anonymous access): its skip lists share a smaller bound
// (kermit.Accountless).
func (f *sessionFS) Accountless() bool { return auth.IsAnonymous(f.userName()) }

// loggedIn reports whether the session has a user (the data channel is
// offered only then).
func (f *sessionFS) loggedIn() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dir != nil
}

// readOnly reports whether the session's user may not send files here
// (read-only access, anonymous).
func (f *sessionFS) readOnly() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dir != nil && f.dir.ReadOnly
}

// rootPath is the path of the session's tree on the server ("" before
// a login).
func (f *sessionFS) rootPath() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dir == nil {
		return ""
	}
	return f.dir.Path()
}

// outOfFiles reports whether err is the process's or the system's open
// files running out, which sessions ending give back.
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// bind makes root the session's tree.
func (f *sessionFS) bind(user, root string, readOnly bool) error {
	if p := PrivateWithin(root, f.srv.cfg.Private); p != "" {
		f.log.Error("refused: the user's root holds the server's own key or users file; move --state (or --key) out of every root", "user", user, "root", root, "private", p)
		return errors.New("kerf: the server will not serve your directory: it holds the server's own key or users (its administrator must move them out)")
	}
	d, err := filestore.OpenExisting(root)
	if outOfFiles(err) {
		// Not the user's directory's fault, and gone when a session
		// ends (QA g: told "cannot open your directory", exit 3).
		f.log.Warn("opening the user's root: out of open files", "user", user, "root", root, "err", err)
		return errServerShort
	}
	if err != nil {
		f.log.Error("opening the user's root", "user", user, "root", root, "err", err)
		return fmt.Errorf("kerf: the server cannot open your directory")
	}
	d.ReadOnly = readOnly
	d.Sparse = f.srv.cfg.Sparse
	d.Moved = f.srv.movedOf(user)
	d.UnnamedMax = filestore.NetUnnamedMax
	d.Holder, d.TakeOverAfter, d.Done = f, f.srv.cfg.TakeOverAfter, f.ctx.Done()
	f.mu.Lock()
	old := f.dir
	oldUser := f.user
	f.dir, f.user = d, user
	f.mu.Unlock()
	if old != nil {
		f.retire(old, oldUser)
	}
	if !f.counted {
		f.counted = true
		f.srv.sessionLoggedIn()
	}
	f.endHandshake()
	return nil
}

// endHandshake lifts the handshake deadline: from now on only the idle
// timeout applies.
func (f *sessionFS) endHandshake() {
	if !f.handshakeOver {
		f.handshakeOver = true
		f.raw.SetDeadline(time.Time{})
		f.srv.settle(f.slot, true)
	}
}

// Login handles REMOTE LOGIN. An empty password from a TLS client that
// presented a key asks for public-key login: the users file must list
// the key for user. Otherwise the password (or token) is checked. Both
// count against the same throttle and attempts, and fail alike.
func (f *sessionFS) Login(user, password string) error {
	if f.failures >= f.srv.cfg.MaxLoginAttempts {
		f.cancelCause(errTooManyLogins)
		return errTooManyLogins
	}
	cfg := &f.srv.cfg
	if f.loggedIn() && user == f.lastUser && hmac.Equal(f.passMAC(password), f.lastPass) {
		// Already this user, so: a retransmitted REMOTE LOGIN is
		// answered the same way without hashing again. (Another
		// password for the user is checked: the answer must not say a
		// wrong one is right.)
		return nil
	}
	// A key cannot be guessed, nor is checking one costly: it is checked
	// first, and one the users file lists for the user logs in whatever
	// the address's throttle says, which anyone sharing the address (a
	// NAT neighbour, another local user) kept up by guessing passwords
	// (QA). A key that fails is a failed login, throttled below with
	// this verdict.
	ka, keys := cfg.Users.(KeyAuthenticator)
	var keyUser auth.User
	var keyErr error
	if keys && password == "" && f.clientKey != "" && !auth.IsAnonymous(user) {
		if keyUser, keyErr = ka.AuthenticateKey(user, f.clientKey); keyErr == nil {
			cfg.Throttle.Succeed(f.ip, user)
			return f.logIn(keyUser, user, password, "key")
		}
	}
	d, reserved, busy := cfg.Throttle.Begin(f.ip, user)
	if reserved {
		defer cfg.Throttle.End(f.ip)
	}
	if busy {
		// No failure: a client's sessions logging in together, more
		// at once than are checked at once. Not counted, not warned
		// of; told to wait as a throttled login is, which a kerf
		// client does.
		f.log.Debug("login waits: others from the address are being checked", "user", user, "wait", d)
		return fmt.Errorf("%w: other logins from your address are being checked: wait %v", errThrottled, d.Round(100*time.Millisecond))
	}
	if d > 0 {
		// Not even checked: an address that failed recently waits, or
		// has another attempt being checked. The answer is immediate,
		// so that it is not retransmitted.
		f.failures++
		if say, unsaid := f.srv.throttled.note(f.ip, time.Now()); say {
			f.log.Warn("login throttled", "user", user, "wait", d, "unsaid_since_last", unsaid)
		} else {
			f.log.Debug("login throttled", "user", user, "wait", d)
		}
		f.hangUpIfTooMany()
		return fmt.Errorf("%w: too many failed logins from your address: wait %v", errThrottled, d.Round(100*time.Millisecond))
	}
	if auth.IsAnonymous(user) {
		if !cfg.Anonymous {
			// No guess at anything: counted against this connection's
			// attempts, not the address's throttle, which made a
			// client that forgot -u wait, and then a user's own next
			// login (QA).
			f.failures++
			f.log.Info("anonymous login refused: not enabled")
			f.hangUpIfTooMany()
			return errNoAnonymous
		}
		f.log.Info("login", "user", "anonymous", "method", "anonymous", "tls", f.secure)
		f.lastUser, f.lastPass = user, f.passMAC(password)
		return f.bind("anonymous", cfg.Root, true)
	}
	method := "password"
	if password == "" && f.clientKey != "" {
		method = "key"
	}
	if cfg.Users == nil {
		f.fail(user, method)
		return errLoginFailed
	}
	var u auth.User
	var err error
	switch {
	case method == "key" && !keys:
		f.fail(user, method)
		return errLoginFailed
	case method == "key":
		u, err = keyUser, keyErr // checked above, and failed
	default:
		u, err = cfg.Users.Authenticate(user, password)
	}
	if err != nil && !errors.Is(err, auth.ErrLoginFailed) {
		// The server's trouble, not the client's credentials: not a
		// failed login, and not one the throttle counts.
		if outOfFiles(err) {
			f.log.Warn("users file: out of open files", "err", err)
			return errServerShort
		}
		f.log.Error("users file", "err", err)
		return errUsersBroken
	}
	if err != nil {
		f.fail(user, method)
		return errLoginFailed
	}
	cfg.Throttle.Succeed(f.ip, user)
	return f.logIn(u, user, password, method)
}

// logIn makes u, checked by method, the session's user: its root is
// opened and the login logged.
func (f *sessionFS) logIn(u auth.User, user, password, method string) error {
	cfg := &f.srv.cfg
	root := u.Root
	if root == "" {
		root = cfg.Root
	}
	attrs := []any{"user", u.Name, "method", method, "root", root, "read_only", u.ReadOnly, "tls", f.secure}
	if method == "key" {
		attrs = append(attrs, "key", f.clientKey)
	}
	f.log.Info("login", attrs...)
	f.lastUser, f.lastPass = user, f.passMAC(password)
	if err := f.bind(u.Name, root, u.ReadOnly); err != nil {
		return err
	}
	f.mu.Lock()
	f.account, f.method = &u, method
	f.mu.Unlock()
	return nil
}

// AccountLookup is Users that can say what the users file holds for a
// name now (auth.UsersFile): with it, a session whose user is removed or
// changed ends (watchAccount).
type AccountLookup interface {
	Lookup(name string) (auth.User, bool, error)
}

// accountGone says why the session's login no longer stands, or "" if it
// does: the user removed; the root, read-only flag or (for a password
// login) the secret changed; or (for a key login) the key removed. As a
// change of a Unix account's password ends no ssh session, a changed
// password would not have to end one; it does here because changing it
// is what an administrator does about a password that leaked.
func (f *sessionFS) accountGone(users AccountLookup) string {
	f.mu.Lock()
	was, method := f.account, f.method
	f.mu.Unlock()
	if was == nil {
		return ""
	}
	now, ok, err := users.Lookup(was.Name)
	switch {
	case err != nil:
		return "" // the file unreadable: logins fail, sessions stand
	case !ok:
		return "your account was removed"
	case now.Root != was.Root || now.ReadOnly != was.ReadOnly:
		return "your account was changed (log in again)"
	case method == "password" && now.Secret != was.Secret:
		return "your password was changed (log in again)"
	case method == "key":
		if fp, err := auth.CheckFingerprint(f.clientKey); err != nil || !slices.Contains(now.Keys, fp) {
			return "your key was removed from your account"
		}
	}
	return ""
}

// passMAC is the HMAC-SHA256 of password under the session's own random
// key, made on first use.
func (f *sessionFS) passMAC(password string) []byte {
	if f.passKey == nil {
		f.passKey = make([]byte, 32)
		rand.Read(f.passKey)
	}
	m := hmac.New(sha256.New, f.passKey)
	m.Write([]byte(password))
	return m.Sum(nil)
}

// Logout handles C-Kermit's LOGOUT (REMOTE LOGIN with no argument): the
// session has no user until it logs in again. It is no login attempt,
// so nothing counts against the throttle.
func (f *sessionFS) Logout() {
	f.mu.Lock()
	if f.dir != nil {
		f.retire(f.dir, f.user)
		f.dir = nil
	}
	user := f.user
	f.user, f.account = "", nil
	f.mu.Unlock()
	f.lastUser, f.lastPass = "", nil
	f.log.Info("logout", "user", user)
	if !f.srv.cfg.Anonymous && f.handshakeOver {
		// Logged out is as good as not logged in: the connection must
		// log in again within the handshake time, or it is closed (it
		// was held until the idle timeout).
		f.handshakeOver = false
		f.raw.SetDeadline(time.Now().Add(f.srv.cfg.HandshakeTimeout))
		f.srv.settle(f.slot, false)
	}
}

func (f *sessionFS) fail(user, method string) {
	f.failures++
	f.srv.cfg.Throttle.Fail(f.ip, user)
	// failures counts this connection's; a client that reconnects for
	// each try is seen in the address's count, which the throttle's
	// wait follows.
	attrs := []any{"user", user, "method", method, "failures", f.failures, "address_failures", f.srv.cfg.Throttle.Failures(f.ip)}
	if method == "key" {
		attrs = append(attrs, "key", f.clientKey)
	}
	f.log.Warn("login failed", attrs...)
	f.hangUpIfTooMany()
}

// hangUpIfTooMany ends the session after MaxLoginAttempts failures,
// once the E packet has had time to go out.
func (f *sessionFS) hangUpIfTooMany() {
	if f.failures >= f.srv.cfg.MaxLoginAttempts {
		// Said in the E that a packet meanwhile gets (QA: "Transfer
		// canceled").
		time.AfterFunc(100*time.Millisecond, func() { f.cancelCause(errTooManyLogins) })
	}
}

// Authorized lets a command run once there is a user, binding anonymous
// access on first use when it is enabled. A read-only session is refused
// a SEND at once (rather than file by file), so that the client's SEND
// fails with the reason.
func (f *sessionFS) Authorized(cmd string) error {
	if !f.loggedIn() {
		if !f.srv.cfg.Anonymous {
			return errLoginRequired
		}
		f.log.Info("anonymous session", "tls", f.secure)
		if err := f.bind("anonymous", f.srv.cfg.Root, true); err != nil {
			return err
		}
	}
	f.endHandshake()
	if cmd == "S" {
		if d, err := f.tree(); err == nil && d.ReadOnly {
			return errReadOnly
		}
	}
	return nil
}

func (f *sessionFS) tree() (*filestore.Dir, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dir == nil {
		return nil, errLoginRequired
	}
	return f.dir, nil
}

// named checks a name and returns the session's tree.
func (f *sessionFS) named(names ...string) (*filestore.Dir, error) {
	for _, n := range names {
		if err := checkName(n); err != nil {
			return nil, err
		}
	}
	return f.tree()
}

// existing is named for names of entries that are there (checkLength).
func (f *sessionFS) existing(names ...string) (*filestore.Dir, error) {
	for _, n := range names {
		if err := checkLength(n); err != nil {
			return nil, err
		}
	}
	return f.tree()
}

// maxSpecLen bounds a filespec of several names (a GET of many files,
// a listing's top names): more than any packet carries.
const maxSpecLen = 64 << 10

// spec checks a filespec, which may name several files (GET a b c,
// kerf-tree listings): each of its names as named does, not the whole
// as one name, whose "element" would be every name together.
func (f *sessionFS) spec(spec string) (*filestore.Dir, error) {
	if len(spec) > maxSpecLen {
		return nil, fmt.Errorf("kerf: filespec of %d bytes is too long (at most %d)", len(spec), maxSpecLen)
	}
	if err := checkName(strings.ReplaceAll(spec, " ", "/")); err != nil && !errors.Is(err, errTooLong) {
		return nil, err // a control character anywhere
	}
	return f.named(framing.SplitSpec(spec)...)
}

func (f *sessionFS) Create(name string) (kermit.Incoming, error) {
	d, err := f.named(name)
	if err != nil {
		return nil, err
	}
	inc, err := d.Create(name)
	return inc, clearErr(err, name)
}

func (f *sessionFS) Match(spec string, recursive bool) ([]kermit.OutgoingFile, error) {
	var files []kermit.OutgoingFile
	_, err := f.MatchEach(spec, recursive, nil, func(o kermit.OutgoingFile) bool {
		files = append(files, o)
		return true
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// MatchEach hands a GET's files to yield as the walk finds them
// (kermit.MatchStreamer).
func (f *sessionFS) MatchEach(spec string, recursive bool, keep func(string) bool, yield func(kermit.OutgoingFile) bool) (int, error) {
	d, err := f.spec(spec)
	if err != nil {
		return 0, err
	}
	left, err := d.MatchWalk(spec, recursive, keep, func(o kermit.OutgoingFile) bool {
		// A file of a walked tree that cannot be opened (a link
		// leading out) says why in words, as a name given plainly does.
		if open := o.Open; open != nil {
			name := o.Name
			o.Open = func() (kermit.FileReader, error) {
				r, err := open()
				return r, clearErr(err, name)
			}
		}
		return yield(o)
	})
	return left, clearErr(err, spec)
}

func (f *sessionFS) List(spec string) (string, error) {
	d, err := f.spec(spec)
	if err != nil {
		return "", err
	}
	list, err := d.List(spec)
	return list, clearErr(err, spec)
}

// ListTo is List or ListLiteral, to the nanosecond if form asks,
// written as it is made (kermit.ListWriter).
func (f *sessionFS) ListTo(spec string, form kermit.ListForm, w io.Writer) error {
	d, err := f.spec(spec)
	if form.Literal {
		d, err = f.named(spec)
	}
	if err != nil {
		return err
	}
	return clearErr(d.ListTo(spec, form, w), spec)
}

// Space is the free space where the user's tree is (REMOTE SPACE).
func (f *sessionFS) Space() (int64, error) {
	d, err := f.tree()
	if err != nil {
		return 0, err
	}
	return d.Space()
}

func (f *sessionFS) ListTree(spec string, form kermit.TreeForm, w io.Writer) error {
	d, err := f.spec(spec)
	if err != nil {
		return err
	}
	return clearErr(d.ListTree(spec, form, w), spec)
}

func (f *sessionFS) Chdir(dir string) error {
	d, err := f.named(dir)
	if err != nil {
		return err
	}
	return clearErr(d.Chdir(dir), dir)
}

func (f *sessionFS) Pwd() string {
	d, err := f.tree()
	if err != nil {
		return ""
	}
	return d.Pwd()
}

func (f *sessionFS) Remove(name string) error {
	d, err := f.existing(name)
	if err != nil {
		return err
	}
	return f.removed(d, name, false)
}

// RemoveNamed is Remove (RemoveLiteral if literal) that returns the
// first max files removed and how many (kermit.RemoveNamer).
func (f *sessionFS) RemoveNamed(name string, literal bool, max int) ([]string, int, error) {
	d, err := f.existing(name)
	if err != nil {
		return nil, 0, err
	}
	var names []string
	n := 0
	err = f.removedEach(d, name, literal, func(rel string) {
		if n++; len(names) < max {
			names = append(names, rel)
		}
	})
	return names, n, err
}

// removed removes name (a pattern's files unless literal), logging each
// file that went by its name (QA: a pattern's were logged as the
// pattern); a partial, which is no file of the tree, by the name given.
func (f *sessionFS) removed(d *filestore.Dir, name string, literal bool) error {
	return f.removedEach(d, name, literal, nil)
}

// removedEach is removed telling each, if not nil, each file's name.
func (f *sessionFS) removedEach(d *filestore.Dir, name string, literal bool, each func(rel string)) error {
	said := false
	err := d.RemoveEach(name, literal, func(rel string) {
		said = true
		f.changed("removed", nil, "name", rel)
		if each != nil {
			each(rel)
		}
	})
	if !said {
		return f.changed("removed", clearErr(err, name), "name", name)
	}
	return clearErr(err, name)
}

// changed logs a change to the tree that a command made (what, with
// attrs), if err says it was made: an operator's record of who removed
// or renamed what (QA: none at any level), as the transfer log records
// the files that came.
func (f *sessionFS) changed(what string, err error, attrs ...any) error {
	if err == nil {
		f.log.Info(what, append([]any{"user", f.userName()}, attrs...)...)
	}
	return err
}

// RemoveLiteral, ListLiteral and ListTreeLiteral take the name as it
// is, never as a pattern (kermit.LiteralFS).
func (f *sessionFS) RemoveLiteral(name string) error {
	d, err := f.existing(name)
	if err != nil {
		return err
	}
	return f.removed(d, name, true)
}

func (f *sessionFS) ListLiteral(name string) (string, error) {
	d, err := f.named(name)
	if err != nil {
		return "", err
	}
	list, err := d.ListLiteral(name)
	return list, clearErr(err, name)
}

func (f *sessionFS) ListTreeLiteral(name string, form kermit.TreeForm, w io.Writer) error {
	d, err := f.named(name)
	if err != nil {
		return err
	}
	return clearErr(d.ListTreeLiteral(name, form, w), name)
}

// CanRemoveSent and RemoveSent let a GET remove what it sent once the
// client has it saved (kermit.SentRemover).
func (f *sessionFS) CanRemoveSent() error {
	d, err := f.tree()
	if err != nil {
		return err
	}
	return d.CanRemoveSent()
}

func (f *sessionFS) RemoveSent(file kermit.OutgoingFile) error {
	d, err := f.tree()
	if err != nil {
		return err
	}
	return clearErr(d.RemoveSent(file), file.Path)
}

func (f *sessionFS) Mkdir(name string) error {
	d, err := f.named(name)
	if err != nil {
		return err
	}
	return f.changed("made directory", clearErr(d.Mkdir(name), name), "name", name)
}

// ReceiveDir makes an empty directory a client sends (kermit.DirReceiver).
func (f *sessionFS) ReceiveDir(name string) error {
	d, err := f.named(name)
	if err != nil {
		return err
	}
	return clearErr(d.ReceiveDir(name), name)
}

// MakeDir and SetDirAttrs keep the directories a client sends with their
// attributes (kermit.DirAttrReceiver).
func (f *sessionFS) MakeDir(name string, perm fs.FileMode, havePerm bool) error {
	d, err := f.named(name)
	if err != nil {
		return err
	}
	return clearErr(d.MakeDir(name, perm, havePerm), name)
}

func (f *sessionFS) SetDirAttrs(name string, perm fs.FileMode, havePerm bool, mtime time.Time) error {
	d, err := f.named(name)
	if err != nil {
		return err
	}
	return clearErr(d.SetDirAttrs(name, perm, havePerm, mtime), name)
}

func (f *sessionFS) Rmdir(name string) error {
	d, err := f.existing(name)
	if err != nil {
		return err
	}
	return f.changed("removed directory", clearErr(d.Rmdir(name), name), "name", name)
}

func (f *sessionFS) Rename(from, to string) error {
	if _, err := f.existing(from); err != nil {
		return err
	}
	d, err := f.named(to)
	if err != nil {
		return err
	}
	return f.changed("renamed", clearErr(d.Rename(from, to), from+" -> "+to), "from", from, "to", to)
}

// clearErr rewords os.Root's refusal of a path that leaves the root
// (through ".." or a symbolic link) for the client.
func clearErr(err error, name string) error {
	if err == nil {
		return nil // before errors.As, whose targets escape: no allocation per file
	}
	if filestore.LeadsOutside(err) {
		return fmt.Errorf("kerf: %s: refused: the path leads outside your directory (through a symbolic link or ..)", name)
	}
	if gone := (*kermit.LinkTargetGone)(nil); errors.As(err, &gone) {
		return &kermit.LinkTargetGone{Err: clearErr(gone.Err, name)}
	}
	// A client (C-Kermit shows it as "Protocol Error: ...") needs the
	// name and the cause, not the system call ("statat", "renameat").
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("kerf: %s: %w%s", pe.Path, pe.Err, saidAfter(err, pe))
	case errors.As(err, &le):
		return fmt.Errorf("kerf: %s -> %s: %w%s", le.Old, le.New, le.Err, saidAfter(err, le))
	}
	return err
}

// saidAfter is what err says after inner's words: an explanation
// added around it ("(the file system has no inodes left ...)"), which
// the client needs as much as the cause (QA aj: an upload to a server
// out of inodes was told only "no space left on device").
func saidAfter(err, inner error) string {
	msg, in := err.Error(), inner.Error()
	i := strings.LastIndex(msg, in)
	if i < 0 {
		return ""
	}
	// Only words in brackets, as the store adds them: not another
	// error's text, with its own system call and paths (review 55).
	if more := msg[i+len(in):]; strings.HasPrefix(more, " (") && strings.HasSuffix(more, ")") {
		return more
	}
	return ""
}

// BeginBatch and EndBatch pass a received group's fsync batching on to
// the session's tree (see kermit's groupBatcher): the group is made
// durable once, before its B is acknowledged.
func (f *sessionFS) BeginBatch() {
	f.mu.Lock()
	d := f.dir
	f.mu.Unlock()
	if d != nil {
		d.BeginBatch()
	}
}

// Saved passes kermit's savedChecker on to the session's tree: after a
// group whose save failed, the files that were saved all the same are
// logged saved, not failed (QA aj).
func (f *sessionFS) Saved(name string) bool {
	f.mu.Lock()
	d := f.dir
	f.mu.Unlock()
	return d != nil && d.Saved(name)
}

func (f *sessionFS) EndBatch() error {
	f.mu.Lock()
	d := f.dir
	f.mu.Unlock()
	if d != nil {
		return d.EndBatch()
	}
	return nil
}
