package control_test

// The hostile-client suite: every test runs over real loopback sockets
// and asserts both the refusal and that nothing outside the served root
// was read or written.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kerf/auth"
	"kerf/control"
	"kerf/filestore"
	"kerf/kermit"
)

const secret = "TOP SECRET: never leaves outside/"

// jail is a served root beside a directory the server must never touch.
type jail struct {
	base, root, outside string
}

// newJail makes base/root (served) and base/outside (holding a secret),
// with symlinks from the root to outside, a FIFO and a device link.
func newJail(t *testing.T) jail {
	t.Helper()
	base := t.TempDir()
	j := jail{base: base, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{j.root, j.outside, filepath.Join(j.root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(j.outside, "secret.txt"), []byte(secret), 0o644))
	must(t, os.WriteFile(filepath.Join(j.root, "pub.txt"), []byte("public\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(j.root, "sub", "in.txt"), []byte("inside\n"), 0o644))
	must(t, os.Symlink(j.outside, filepath.Join(j.root, "out")))                            // dir link leaving the root
	must(t, os.Symlink(filepath.Join(j.outside, "secret.txt"), filepath.Join(j.root, "f"))) // file link leaving the root
	must(t, os.Symlink("../../outside", filepath.Join(j.root, "sub", "up")))                // relative link leaving the root
	must(t, os.Symlink("/dev/zero", filepath.Join(j.root, "zero")))
	if err := syscall.Mkfifo(filepath.Join(j.root, "fifo"), 0o644); err != nil {
		t.Logf("no FIFO: %v", err)
	}
	return j
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot describes every entry under dir (without following links).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		desc := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		m[p] = desc
		return nil
	})
	return m
}

// untouched asserts that nothing outside the root changed: the outside
// directory and the base holding root and outside.
func (j jail) untouched(t *testing.T, before map[string]string) {
	t.Helper()
	after := snapshot(t, j.outside)
	for p, d := range before {
		if after[p] != d {
			t.Errorf("outside the root: %s changed (%q -> %q)", p, d, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("outside the root: %s appeared", p)
		}
	}
	ents, _ := os.ReadDir(j.base)
	for _, e := range ents {
		if e.Name() != "root" && e.Name() != "outside" && e.Name() != "back" {
			t.Errorf("outside the root: %s appeared in %s", e.Name(), j.base)
		}
	}
}

// noSecret asserts that no file under dir holds the secret.
func noSecret(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("TOP SECRET")) {
				t.Errorf("the secret was read: it is in %s", p)
			}
		}
		return nil
	})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func dialT(t *testing.T, ctx context.Context, cfg control.ClientConfig) *control.Client {
	t.Helper()
	cl, err := control.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func memFile(name string, data []byte) kermit.OutgoingFile {
	return kermit.OutgoingFile{Name: name, Size: int64(len(data)), ModTime: time.Now(), Mode: 0o644,
		Open: func() (kermit.FileReader, error) { return nopCloser{bytes.NewReader(data)}, nil }}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func TestLogin(t *testing.T) {
	tok, tokStored := auth.NewToken()
	cases := []struct {
		name      string
		anonymous bool
		user, pw  string
		wantErr   string // "" = logs in
		canWrite  bool
	}{
		{"right password", false, testUser, testPass, "", true},
		{"wrong password", false, testUser, "wrong", "kerf: login failed", false},
		{"unknown user", false, "mallory", testPass, "kerf: login failed", false},
		{"empty password", false, testUser, "", "kerf: login failed", false},
		{"token", false, "ci", tok, "", true},
		{"wrong token", false, "ci", tok[:len(tok)-1] + "x", "kerf: login failed", false},
		{"read-only user", false, "reader", "r-pass", "", false},
		{"anonymous when off", false, "", "", "anonymous access is not enabled", false},
		{"anonymous when on", true, "anonymous", "guest@", "", false},
		{"no user when anonymous on", true, "", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := newJail(t)
			before := snapshot(t, j.outside)
			throttle := &auth.Throttle{Base: time.Millisecond, Max: time.Millisecond, Forget: time.Minute}
			srv := startServerWith(t, j.root, func(c *control.ServerConfig) {
				c.Anonymous = tc.anonymous
				c.Throttle = throttle
				c.Users = testUsers(t,
					auth.User{Name: "ci", Secret: tokStored},
					auth.User{Name: "reader", Secret: auth.HashPassword("r-pass", testArgon), ReadOnly: true})
			})
			ctx := ctxT(t)
			cl, err := control.Dial(ctx, clientConfig(srv, func(c *control.ClientConfig) { c.User, c.Password = tc.user, tc.pw }))
			ip := net.ParseIP("127.0.0.1")
			if tc.wantErr != "" {
				if err == nil {
					cl.Close()
					t.Fatal("logged in; want refusal")
				}
				if !errors.Is(err, control.ErrLogin) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrLogin with %q", err, tc.wantErr)
				}
				// An anonymous try guesses nothing: not throttled.
				want := 1
				if tc.user == "" {
					want = 0
				}
				if got := throttle.Failures(ip); got != want {
					t.Errorf("throttle counted %d failures, want %d", got, want)
				}
				j.untouched(t, before)
				return
			}
			if err != nil {
				t.Fatalf("login: %v", err)
			}
			defer cl.Close()
			if got := throttle.Failures(ip); got != 0 {
				t.Errorf("throttle has %d failures after a success", got)
			}
			err = cl.Send(ctx, []kermit.OutgoingFile{memFile("new.txt", []byte("hello"))})
			_, statErr := os.Stat(filepath.Join(j.root, "new.txt"))
			if tc.canWrite && (err != nil || statErr != nil) {
				t.Errorf("read-write user could not send: %v / %v", err, statErr)
			}
			if !tc.canWrite && statErr == nil {
				t.Errorf("read-only session wrote new.txt")
			}
			if _, err := cl.Generic(ctx, 'E', "pub.txt"); (err == nil) != tc.canWrite {
				t.Errorf("delete: err = %v, can write = %v", err, tc.canWrite)
			}
			back := filepath.Join(j.base, "back")
			store, _ := filestore.Open(back)
			defer store.Close()
			if err := cl.Get(ctx, "sub", true, store); tc.canWrite && err != nil {
				t.Errorf("get: %v", err)
			}
			j.untouched(t, before)
			noSecret(t, back)
		})
	}
}

// The server must not say whether the name or the password was wrong.
func TestLoginFailureIsUniform(t *testing.T) {
	srv := startServer(t, t.TempDir())
	var attempts []func(*control.ClientConfig)
	for _, up := range [][2]string{{testUser, "wrong"}, {"nobody", testPass}, {"nobody", "wrong"}} {
		attempts = append(attempts, func(c *control.ClientConfig) { c.User, c.Password = up[0], up[1] })
	}
	failSameWay(t, srv, attempts)
}

// failSameWay makes each attempt to log in to srv and fails t if one
// succeeds or if their error messages differ.
func failSameWay(t *testing.T, srv *control.Server, attempts []func(*control.ClientConfig)) {
	t.Helper()
	ctx := ctxT(t)
	var msgs []string
	for i, mod := range attempts {
		var err error
		// A throttled attempt is answered unchecked ("login
		// throttled"), which says nothing about which part was wrong:
		// wait out the (short) throttle and try again.
		for try := 0; try < 50; try++ {
			if _, err = control.Dial(ctx, clientConfig(srv, mod)); err == nil || !strings.Contains(err.Error(), "login throttled") {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err == nil {
			t.Fatalf("attempt %d logged in", i)
		}
		msgs = append(msgs, err.Error())
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Errorf("failure messages differ: %q vs %q", msgs[0], m)
		}
	}
}

// rawTLS opens a TLS connection to srv that does not log in.
func rawTLS(t *testing.T, srv *control.Server) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCommandsNeedLogin(t *testing.T) {
	j := newJail(t)
	before := snapshot(t, j.outside)
	srv := startServer(t, j.root)
	ctx := ctxT(t)
	rootBefore := snapshot(t, j.root)
	steps := []struct {
		name string
		run  func(s *kermit.Session) error
	}{
		{"send", func(s *kermit.Session) error {
			return s.Send(ctx, []kermit.OutgoingFile{memFile("x.txt", []byte("x"))})
		}},
		{"get", func(s *kermit.Session) error {
			store, _ := filestore.Open(filepath.Join(j.base, "back"))
			defer store.Close()
			return s.Get(ctx, "pub.txt", false, store)
		}},
		{"ls", func(s *kermit.Session) error { _, err := s.Generic(ctx, 'D', ""); return err }},
		{"cd", func(s *kermit.Session) error { _, err := s.Generic(ctx, 'C', "sub"); return err }},
		{"rm", func(s *kermit.Session) error { _, err := s.Generic(ctx, 'E', "pub.txt"); return err }},
		{"mkdir", func(s *kermit.Session) error { _, err := s.Generic(ctx, 'm', "newdir"); return err }},
		{"mv", func(s *kermit.Session) error { _, err := s.Generic(ctx, 'R', "pub.txt", "moved"); return err }},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			s := kermit.NewSession(rawTLS(t, srv), kermit.DefaultConfig())
			defer s.Close()
			err := st.run(s)
			var pe *kermit.PeerError
			if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "login required") {
				t.Fatalf("err = %v, want E \"login required\"", err)
			}
		})
	}
	if after := snapshot(t, j.root); fmt.Sprint(after) != fmt.Sprint(rootBefore) {
		t.Errorf("the root changed without a login")
	}
	j.untouched(t, before)
	noSecret(t, filepath.Join(j.base, "back"))
}

func TestTooManyFailedLoginsCloses(t *testing.T) {
	srv := startServerWith(t, t.TempDir(), func(c *control.ServerConfig) { c.MaxLoginAttempts = 2 })
	ctx := ctxT(t)
	tc := rawTLS(t, srv)
	s := kermit.NewSession(tc, kermit.DefaultConfig())
	defer s.Close()
	for i := range 2 {
		if _, err := s.Generic(ctx, 'I', testUser, "wrong"); err == nil {
			t.Fatalf("attempt %d logged in", i)
		}
	}
	// A packet meanwhile is answered with an E that says why (QA:
	// "Transfer canceled", when it came after the session's end began:
	// that end now gives the same reason).
	if _, err := s.Generic(ctx, 'I', testUser, "again"); err == nil || !strings.Contains(err.Error(), "too many failed logins on this connection") {
		t.Errorf("a login after the last one: %v; want the E saying why", err)
	}
	// The server hangs up: the connection reads EOF, whatever we send.
	tc.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := io.Copy(io.Discard, tc)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server kept the connection open after too many failed logins")
	}
}

// After a failure, attempts from the same address are refused unchecked
// until the throttle's delay has passed — even with the right password —
// and the answer still does not say which part was wrong.
func TestFailedLoginsSlowDown(t *testing.T) {
	throttle := &auth.Throttle{Base: time.Hour, Max: time.Hour, Forget: 2 * time.Hour}
	srv := startServerWith(t, t.TempDir(), func(c *control.ServerConfig) { c.Throttle = throttle })
	_, err := control.Dial(ctxT(t), clientConfig(srv, func(c *control.ClientConfig) { c.Password = "wrong" }))
	if !errors.Is(err, control.ErrLogin) {
		t.Fatalf("err = %v", err)
	}
	if d := throttle.Delay(net.ParseIP("127.0.0.1"), testUser); d <= 0 {
		t.Fatalf("no delay after a failure")
	}
	cl, err := control.Dial(ctxT(t), clientConfig(srv, nil))
	if err == nil {
		cl.Close()
		t.Fatal("a login right after a failure was not slowed down")
	}
	if !errors.Is(err, control.ErrLogin) || !strings.Contains(err.Error(), "login throttled: too many failed logins") {
		t.Errorf("err = %v", err)
	}
	// Throttled is not refused for the credentials: a key user must not
	// be told to have the key added.
	if errors.Is(err, control.ErrCredentials) {
		t.Errorf("a throttled login is ErrCredentials: %v", err)
	}
	if n := throttle.Failures(net.ParseIP("127.0.0.1")); n != 1 {
		t.Errorf("throttled attempts were counted as failures: %d", n)
	}
}

// A users file the server cannot read (made root's by a `sudo kerf user
// add` beside a server running as its own user, or broken by an edit),
// or one that was there and is gone (deleted or moved: QA, every login
// then failed as if its key were not listed, and the log said only
// WARN login failed), refuses every login, but says it is the server's
// trouble: not ErrCredentials, not counted by the throttle, and an
// ERROR in the log naming the file. A password login and a key login
// alike.
func TestUsersFileUnreadableIsNotACredentialsFailure(t *testing.T) {
	robotKey := clientKey(t)
	cases := []struct {
		name  string
		spoil func(path string) error
		says  string // in the log's ERROR line, besides the file's name
	}{
		{"corrupt", func(p string) error { return os.WriteFile(p, []byte("{not json"), 0o600) }, "invalid character"},
		{"deleted", os.Remove, "was there and is not any more"},
		{"moved", func(p string) error { return os.Rename(p, p+".old") }, "was there and is not any more"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			throttle := &auth.Throttle{Base: time.Hour, Max: time.Hour, Forget: 2 * time.Hour}
			users := testUsers(t, auth.User{Name: "robot", Keys: []string{robotKey.Fingerprint}})
			var logs syncBuf
			srv := startServerWith(t, t.TempDir(), func(c *control.ServerConfig) {
				c.Throttle = throttle
				c.Users = users
				c.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			})
			must(t, tc.spoil(users.Path()))
			for _, login := range []struct {
				name string
				mod  func(*control.ClientConfig)
			}{
				{"password", nil},
				{"key", func(c *control.ClientConfig) { c.User, c.Password, c.ClientCert = "robot", "", &robotKey.Cert }},
				{"password again", nil},
			} {
				_, err := control.Dial(ctxT(t), clientConfig(srv, login.mod))
				if !errors.Is(err, control.ErrLogin) || errors.Is(err, control.ErrCredentials) || !strings.Contains(err.Error(), "cannot read its users file") {
					t.Fatalf("%s login: err = %v", login.name, err)
				}
			}
			if n := throttle.Failures(net.ParseIP("127.0.0.1")); n != 0 {
				t.Errorf("the server's trouble counted as %d failed logins", n)
			}
			var errLine string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "level=ERROR") && strings.Contains(l, users.Path()) && strings.Contains(l, tc.says) {
					errLine = l
				}
				if strings.Contains(l, "login failed") {
					t.Errorf("logged as a failed login: %s", l)
				}
			}
			if errLine == "" {
				t.Errorf("no ERROR naming %s and saying %q in the log:\n%s", users.Path(), tc.says, logs.String())
			}
		})
	}
}

func TestHostKeyPinning(t *testing.T) {
	throttle := &auth.Throttle{Base: time.Millisecond, Max: time.Millisecond, Forget: time.Minute}
	srv := startServerWith(t, t.TempDir(), func(c *control.ServerConfig) { c.Throttle = throttle })
	addr := srv.Addr().String()
	other, _ := auth.NewIdentity()
	kh := func(t *testing.T, content string) *auth.KnownHosts {
		p := filepath.Join(t.TempDir(), "known_hosts")
		if content != "" {
			must(t, os.WriteFile(p, []byte(content), 0o600))
		}
		return &auth.KnownHosts{Path: p}
	}
	cases := []struct {
		name      string
		file      string
		acceptNew bool
		acceptChg bool
		wantErr   error
	}{
		{"unknown refused", "", false, false, auth.ErrHostUnknown},
		{"unknown accepted", "", true, false, nil},
		{"known", addr + " " + srv.Fingerprint() + "\n", false, false, nil},
		{"changed refused", addr + " " + other.Fingerprint + "\n", true, false, auth.ErrHostKeyChanged},
		{"changed accepted", addr + " " + other.Fingerprint + "\n", false, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := kh(t, tc.file)
			k.AcceptNew, k.AcceptChanged = tc.acceptNew, tc.acceptChg
			// A wrong password: if it were ever sent, the server would count it.
			cl, err := control.Dial(ctxT(t), clientConfig(srv, func(c *control.ClientConfig) {
				c.VerifyHost = k.Check
				if tc.wantErr != nil {
					c.Password = "wrong"
				}
			}))
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				cl.Close()
				if fp, ok, _ := k.Lookup(addr); !ok || fp != srv.Fingerprint() {
					t.Errorf("pinned %q, %v; want %s", fp, ok, srv.Fingerprint())
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if n := throttle.Failures(net.ParseIP("127.0.0.1")); n != 0 {
				t.Errorf("the password was sent to an unverified server (%d failures counted)", n)
			}
			if b, _ := os.ReadFile(k.Path); string(b) != tc.file {
				t.Errorf("known_hosts changed on refusal: %q", b)
			}
		})
	}
}

// A server that takes the TLS handshake and then never answers (not a
// kerf server, or a hung one) is given up on after LoginTimeout with a
// clear error. (Regression: the login's Kermit retries ran for about 25
// minutes.)
func TestLoginGivesUpOnASilentServer(t *testing.T) {
	id, err := auth.NewIdentity()
	must(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{id.Cert}, MinVersion: tls.VersionTLS13})
	must(t, err)
	defer ln.Close()
	serveEach(ln, func(c net.Conn) { defer c.Close(); io.Copy(io.Discard, c) }) // reads, never answers
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = control.Dial(ctx, control.ClientConfig{
		Addr: ln.Addr().String(), User: "u", Password: "p",
		VerifyHost:   func(string, string) error { return nil },
		LoginTimeout: 300 * time.Millisecond,
	})
	if err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("Dial = %v, want a login that gives up with 'no answer'", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Dial returned only after the test's own deadline (%v)", time.Since(start))
	}
}

// C-Kermit's LOGOUT (REMOTE LOGIN with nothing) logs the session out and
// is no failed login: the throttle counts nothing (it counted each as an
// anonymous attempt, and the user's next real login was throttled). A
// second login as the same user with a wrong password is refused, not
// answered as the first was.
func TestLogoutIsNoFailedLogin(t *testing.T) {
	throttle := &auth.Throttle{Base: time.Hour, Max: time.Hour, Forget: 2 * time.Hour}
	srv := startServerWith(t, t.TempDir(), func(c *control.ServerConfig) { c.Throttle = throttle })
	cl, err := control.Dial(ctxT(t), clientConfig(srv, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s := cl.Session()
	if _, err := s.Generic(ctxT(t), 'I', testUser, "wrong"); err == nil {
		t.Error("a second login with a wrong password was answered as right")
	}
	if _, err := s.Generic(ctxT(t), 'I'); err != nil {
		t.Fatalf("logout: %v", err)
	}
	if n := throttle.Failures(net.ParseIP("127.0.0.1")); n != 1 {
		t.Errorf("%d failures counted, want the one wrong password only", n)
	}
	if _, err := s.Generic(ctxT(t), 'A'); err == nil || !strings.Contains(err.Error(), "login") {
		t.Errorf("a command after logout: %v, want a refusal asking for a login", err)
	}
}

// A session logged out must log in again within the handshake time, as a
// new one must: it is closed after it (it stayed until the idle timeout).
func TestLoggedOutSessionHasTheHandshakeTime(t *testing.T) {
	srv := startServerWith(t, t.TempDir(), func(c *control.ServerConfig) { c.HandshakeTimeout = 500 * time.Millisecond })
	cl, err := control.Dial(ctxT(t), clientConfig(srv, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s := cl.Session()
	time.Sleep(700 * time.Millisecond) // logged in: the handshake time no longer applies
	if _, err := s.Generic(ctxT(t), 'A'); err != nil {
		t.Fatalf("a command after the handshake time, logged in: %v", err)
	}
	if _, err := s.Generic(ctxT(t), 'I'); err != nil {
		t.Fatalf("logout: %v", err)
	}
	time.Sleep(700 * time.Millisecond)
	if _, err := s.Generic(ctxT(t), 'I', testUser, testPass); err == nil {
		t.Fatal("a login after the handshake time since the logout was answered")
	}
}
