package control_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/auth"
	"kerf/control"
	"kerf/kermit"
)

// clientKey is a throwaway client identity (kerf key) for the tests.
func clientKey(t *testing.T) *auth.Identity {
	t.Helper()
	id, err := auth.NewClientIdentity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// syncBuf collects a server's log lines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Public-key login: a TLS client presents its certificate and logs in
// with REMOTE LOGIN user and an empty password; the users file lists
// the key's fingerprint for that user.
func TestKeyLogin(t *testing.T) {
	robotKey, bobKey, strangerKey, aliceKey := clientKey(t), clientKey(t), clientKey(t), clientKey(t)
	// A certificate whose private key the client does not hold: robot's
	// certificate with the stranger's key.
	stolen := tls.Certificate{Certificate: robotKey.Cert.Certificate, PrivateKey: strangerKey.Cert.PrivateKey}
	cases := []struct {
		name     string
		classic  bool
		user, pw string
		cert     *tls.Certificate
		wantErr  string // "" = logs in
		method   string // logged method of a success
	}{
		{"key", false, "robot", "", &robotKey.Cert, "", "key"},
		{"second key of the user", false, "bob", "", &aliceKey.Cert, "", "key"},
		{"key not listed", false, "robot", "", &strangerKey.Cert, "kerf: login failed", ""},
		{"key of another user", false, "robot", "", &bobKey.Cert, "kerf: login failed", ""},
		{"unknown user with a key", false, "mallory", "", &robotKey.Cert, "kerf: login failed", ""},
		{"no key, empty password", false, "robot", "", nil, "kerf: login failed", ""},
		{"key-only user, some password", false, "robot", "guess", &robotKey.Cert, "kerf: login failed", ""},
		{"password with a key presented", false, testUser, testPass, &strangerKey.Cert, "", "password"},
		{"password user with a listed key", false, testUser, "", &aliceKey.Cert, "", "key"},
		{"wrong password with a listed key", false, testUser, "wrong", &aliceKey.Cert, "kerf: login failed", ""},
		// TLS itself refuses it: the CertificateVerify signature fails.
		{"certificate without its key", false, "robot", "", &stolen, "tls: ", ""},
		{"classic session", true, "robot", "", &robotKey.Cert, "kerf: login failed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := newJail(t)
			before := snapshot(t, j.outside)
			throttle := &auth.Throttle{Base: time.Millisecond, Max: time.Millisecond, Forget: time.Minute}
			var logs syncBuf
			robotRoot := filepath.Join(j.root, "sub")
			srv := startServerWith(t, j.root, func(c *control.ServerConfig) {
				c.AllowClassic = tc.classic
				c.Throttle = throttle
				c.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
				users := testUsers(t,
					auth.User{Name: "robot", Keys: []string{robotKey.Fingerprint}, Root: robotRoot},
					auth.User{Name: "bob", Keys: []string{bobKey.Fingerprint, aliceKey.Fingerprint}, Root: robotRoot})
				if err := users.AddKey(testUser, aliceKey.Fingerprint); err != nil {
					t.Fatal(err)
				}
				c.Users = users
			})
			ctx := ctxT(t)
			cfg := clientConfig(srv, func(c *control.ClientConfig) {
				c.User, c.Password, c.ClientCert, c.Classic = tc.user, tc.pw, tc.cert, tc.classic
				if tc.classic {
					c.VerifyHost = nil
				}
			})
			cl, err := control.Dial(ctx, cfg)
			ip := net.ParseIP("127.0.0.1")
			if tc.wantErr != "" {
				if err == nil {
					cl.Close()
					t.Fatal("logged in; want refusal")
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if errors.Is(err, control.ErrLogin) {
					if got := throttle.Failures(ip); got != 1 {
						t.Errorf("throttle counted %d failures, want 1", got)
					}
				}
				if strings.Contains(logs.String(), "msg=login ") {
					t.Errorf("the server logged a login:\n%s", logs.String())
				}
				j.untouched(t, before)
				return
			}
			if err != nil {
				t.Fatalf("login: %v\n%s", err, logs.String())
			}
			defer cl.Close()
			if got := throttle.Failures(ip); got != 0 {
				t.Errorf("throttle has %d failures after a success", got)
			}
			if !strings.Contains(logs.String(), "msg=login ") || !strings.Contains(logs.String(), "method="+tc.method) {
				t.Errorf("server log lacks the login with method=%s:\n%s", tc.method, logs.String())
			}
			if err := cl.Send(ctx, []kermit.OutgoingFile{memFile("new.txt", []byte("hello"))}); err != nil {
				t.Fatalf("send: %v", err)
			}
			dir := j.root
			if tc.user != testUser {
				dir = robotRoot // the user's own root
			}
			if b, err := os.ReadFile(filepath.Join(dir, "new.txt")); err != nil || string(b) != "hello" {
				t.Errorf("sent file: %q %v", b, err)
			}
			if !cl.Dual() || !cl.DataEncrypted() {
				t.Errorf("dual %v, encrypted %v: a key login should get the TLS data channel", cl.Dual(), cl.DataEncrypted())
			}
			j.untouched(t, before)
		})
	}
}

// A wrong key fails with the same words as a wrong password or an
// unknown user, and counts against the same throttle.
func TestKeyLoginFailureIsUniform(t *testing.T) {
	robotKey, strangerKey := clientKey(t), clientKey(t)
	throttle := &auth.Throttle{Base: time.Millisecond, Max: 10 * time.Millisecond, Forget: time.Minute}
	srv := startServerWith(t, t.TempDir(), func(c *control.ServerConfig) {
		c.Throttle = throttle
		c.Users = testUsers(t, auth.User{Name: "robot", Keys: []string{robotKey.Fingerprint}})
	})
	ctx := ctxT(t)
	attempts := []func(*control.ClientConfig){
		func(c *control.ClientConfig) { c.User, c.Password = testUser, "wrong" },
		func(c *control.ClientConfig) { c.User, c.Password, c.ClientCert = "robot", "", &strangerKey.Cert },
		func(c *control.ClientConfig) { c.User, c.Password, c.ClientCert = "nobody", "", &strangerKey.Cert },
		func(c *control.ClientConfig) { c.User, c.Password, c.ClientCert = testUser, "", &robotKey.Cert },
		func(c *control.ClientConfig) { c.User, c.Password = "robot", "" },
	}
	failSameWay(t, srv, attempts)
	if got := throttle.Failures(net.ParseIP("127.0.0.1")); got < 1 {
		t.Errorf("key failures were not counted by the throttle (%d)", got)
	}
	// The throttle refuses key logins too while it holds the name at
	// the address, but for a key listed for the user
	// (TestListedKeyPassesTheThrottle).
	slow := &auth.Throttle{Base: time.Minute, Max: time.Minute, Forget: time.Hour}
	srv2 := startServerWith(t, t.TempDir(), func(c *control.ServerConfig) {
		c.Throttle = slow
		c.Users = testUsers(t, auth.User{Name: "robot", Keys: []string{robotKey.Fingerprint}})
	})
	if _, err := control.Dial(ctx, clientConfig(srv2, func(c *control.ClientConfig) { c.User, c.Password = testUser, "wrong" })); err == nil {
		t.Fatal("wrong password logged in")
	}
	_, err := control.Dial(ctx, clientConfig(srv2, func(c *control.ClientConfig) { c.User, c.Password, c.ClientCert = testUser, "", &strangerKey.Cert }))
	if err == nil || !strings.Contains(err.Error(), "too many failed logins") {
		t.Errorf("a key not listed while throttled: %v, want the throttle's refusal", err)
	}
}

// Users that know no keys (an Authenticator without AuthenticateKey)
// refuse key logins uniformly.
func TestKeyLoginWithoutKeyAuthenticator(t *testing.T) {
	k := clientKey(t)
	srv := startServerWith(t, t.TempDir(), func(c *control.ServerConfig) { c.Users = passwordsOnly{testUsers(t)} })
	_, err := control.Dial(ctxT(t), clientConfig(srv, func(c *control.ClientConfig) { c.Password, c.ClientCert = "", &k.Cert }))
	if err == nil || !strings.Contains(err.Error(), "kerf: login failed") {
		t.Errorf("err = %v, want login failed", err)
	}
	// The failure above holds the address for the test throttle's few
	// milliseconds: a login that comes sooner is told to wait.
	var cl *control.Client
	for try := 0; ; try++ {
		cl, err = control.Dial(ctxT(t), clientConfig(srv, func(c *control.ClientConfig) { c.ClientCert = &k.Cert }))
		if err == nil || try == 20 || !strings.Contains(err.Error(), "login throttled") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("password login with a key presented: %v", err)
	}
	cl.Close()
}

type passwordsOnly struct{ u *auth.UsersFile }

func (p passwordsOnly) Authenticate(name, pw string) (auth.User, error) {
	return p.u.Authenticate(name, pw)
}

// A key the users file lists logs in whatever the address's throttle
// says: anyone sharing the address (a NAT neighbour, another local
// user) who keeps guessing passwords held it up, and a key cannot be
// guessed (QA). A key not listed is still a failed login, throttled.
func TestListedKeyPassesTheThrottle(t *testing.T) {
	robotKey, strangerKey := clientKey(t), clientKey(t)
	throttle := &auth.Throttle{Base: time.Hour, Max: time.Hour, Forget: 2 * time.Hour}
	srv := startServerWith(t, t.TempDir(), func(c *control.ServerConfig) {
		c.Throttle = throttle
		c.Users = testUsers(t, auth.User{Name: "robot", Keys: []string{robotKey.Fingerprint}})
	})
	_, err := control.Dial(ctxT(t), clientConfig(srv, func(c *control.ClientConfig) { c.Password = "wrong" }))
	if !errors.Is(err, control.ErrCredentials) {
		t.Fatalf("a wrong password: %v", err)
	}
	_, err = control.Dial(ctxT(t), clientConfig(srv, nil))
	if err == nil || !strings.Contains(err.Error(), "login throttled") {
		t.Fatalf("the right password right after: %v; want throttled (the test cannot tell)", err)
	}
	cl, err := control.Dial(ctxT(t), clientConfig(srv, func(c *control.ClientConfig) { c.User, c.Password, c.ClientCert = "robot", "", &robotKey.Cert }))
	if err != nil {
		t.Fatalf("robot's key from the throttled address: %v", err)
	}
	cl.Close()
	// (A name the throttle holds: one name's failures hold that name,
	// not the address's others.)
	_, err = control.Dial(ctxT(t), clientConfig(srv, func(c *control.ClientConfig) { c.User, c.Password, c.ClientCert = testUser, "", &strangerKey.Cert }))
	if err == nil || !strings.Contains(err.Error(), "login throttled") {
		t.Errorf("a key not listed from the throttled address: %v; want throttled", err)
	}
}
