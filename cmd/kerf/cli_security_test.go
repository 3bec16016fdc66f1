package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"kerf/auth"
)

// run runs the kerf command line in-process and returns its exit code
// (0, or the exitError's code) and error.
func run(ctx context.Context, args ...string) (int, error) {
	err := runApp(ctx, newApp(), append([]string{"kerf"}, args...))
	if err == nil {
		return 0, nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, err
	}
	return exitUsage, err
}

// withStdin runs f with os.Stdin reading s.
func withStdin(t *testing.T, s string, f func()) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString(s)
	w.Close()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	f()
}

// startServe runs `kerf serve` in-process on a free loopback port with
// state and root, until the test ends, and returns its address.
func startServe(t *testing.T, ctx context.Context, state, root string) string {
	t.Helper()
	addr := freePort(t)
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	// The server gets its own streams: tests swap os.Stdin and os.Stdout
	// for the client commands while it runs. And the clients start only
	// once its command line is parsed (parsed is closed as its action
	// begins): urfave/cli writes into flag values, some of them shared
	// package variables, while it parses.
	app := newApp()
	app.Reader, app.Writer, app.ErrWriter = strings.NewReader(""), io.Discard, io.Discard
	parsed := make(chan struct{})
	for _, cmd := range app.Commands {
		if cmd.Name == "serve" {
			action := cmd.Action
			cmd.Action = func(c *cli.Context) error { close(parsed); return action(c) }
		}
	}
	ended := make(chan struct{})
	go func() {
		// (A handshake time to spare: with 5 s, a login's password
		// check on a machine loaded by other work outlasted it, and the
		// server closed the connection without a word.)
		served <- app.RunContext(sctx, []string{"kerf", "serve", "--state", state, "--root", root, "--listen", addr, "--handshake-timeout", "30s"})
		close(ended)
	}()
	t.Cleanup(func() { stop(); <-ended })
	select {
	case <-parsed:
	case err := <-served:
		t.Fatalf("server did not start: %v", err)
	}
	for !dialable(addr) {
		select {
		case err := <-served:
			t.Fatalf("server did not start: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return addr
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The whole path through the command line: kerf user add, kerf serve
// with its state directory, and clients with and without the right
// password and host key.
func TestCLISecurity(t *testing.T) {
	t.Setenv("KERF_PASSWORD", "")
	os.Unsetenv("KERF_PASSWORD")
	t.Setenv("KERF_USER", "")
	base := t.TempDir()
	state, root, alice := filepath.Join(base, "state"), filepath.Join(base, "root"), filepath.Join(base, "alice")
	for _, d := range []string{root, alice} { // a server makes no missing root
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(code int, err error) {
		t.Helper()
		if code != 0 {
			t.Fatalf("exit %d: %v", code, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	withStdin(t, "s3cret pass\n", func() {
		must(run(ctx, "user", "add", "alice", "--root", alice, "--password-stdin", "--state", state))
	})
	withStdin(t, "other\n", func() {
		if code, _ := run(ctx, "user", "add", "alice", "--password-stdin", "--state", state); code != exitTransfer {
			t.Errorf("duplicate user: exit %d, want %d", code, exitTransfer)
		}
	})
	withStdin(t, "ro pass\n", func() {
		must(run(ctx, "user", "add", "reader", "--read-only", "--password-stdin", "--state", state))
	})
	u, _ := auth.OpenUsers(filepath.Join(state, auth.UsersFileName))
	if e, err := u.Authenticate("alice", "s3cret pass"); err != nil || e.Root != alice {
		t.Fatalf("users file: %+v %v", e, err)
	}

	id, _, err := auth.LoadOrCreateIdentity(state)
	if err != nil {
		t.Fatal(err)
	}
	addr := startServe(t, ctx, state, root)

	src := filepath.Join(base, "hello.txt")
	os.WriteFile(src, []byte("hello over TLS\n"), 0o644)
	pwFile := filepath.Join(base, "pw")
	os.WriteFile(pwFile, []byte("s3cret pass\n"), 0o600)
	badPw := filepath.Join(base, "badpw")
	os.WriteFile(badPw, []byte("wrong\n"), 0o600)
	kh := filepath.Join(base, "known_hosts")
	changed := filepath.Join(base, "known_hosts_changed")
	os.WriteFile(changed, []byte(addr+" sha256:"+strings.Repeat("00", 32)+"\n"), 0o600)

	cases := []struct {
		name     string
		args     []string
		wantCode int
		wantMsg  string
	}{
		{"unknown host refused", []string{"send", "--user", "alice", "--password-file", pwFile, "--known-hosts", kh, src, addr + "/in/"}, exitConnect, "--accept-new-host-key"},
		{"first use pinned", []string{"send", "--user", "alice", "--password-file", pwFile, "--known-hosts", kh, "--accept-new-host-key", src, addr + "/in/"}, 0, ""},
		{"pinned host", []string{"ls", "--user", "alice", "--password-file", pwFile, "--known-hosts", kh, addr + "/in"}, 0, ""},
		{"changed key refused", []string{"ls", "--user", "alice", "--password-file", pwFile, "--known-hosts", changed, "--accept-new-host-key", addr}, exitConnect, "CHANGED"},
		{"read-only user cannot send", []string{"mkdir", "--user", "reader", "--password-file", filepath.Join(base, "ropw"), "--known-hosts", kh, addr + "/x"}, exitTransfer, "read-only"},
		{"no anonymous", []string{"ls", "--known-hosts", kh, addr}, exitConnect, "anonymous access is not enabled"},
		// USER@HOST logs in as USER, over --user: alice's password
		// lets alice list; reader's, with --user alice, makes reader
		// log in, who may not write.
		{"user in the path", []string{"ls", "--password-file", pwFile, "--known-hosts", kh, "alice@" + addr + "/in"}, 0, ""},
		{"the path's user first", []string{"mkdir", "--user", "alice", "--password-file", filepath.Join(base, "ropw"), "--known-hosts", kh, "reader@" + addr + "/y"}, exitTransfer, "read-only"},
		// Right after a failure the address is throttled: refused
		// unchecked. The client waits as long as the server says and
		// tries once more, so the password is checked, and refused.
		{"wrong password", []string{"ls", "--user", "alice", "--password-file", badPw, "--known-hosts", kh, addr}, exitConnect, "login failed"},
	}
	os.WriteFile(filepath.Join(base, "ropw"), []byte("ro pass\n"), 0o600)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, err := run(ctx, append([]string{"--quiet"}, tc.args...)...)
			if code != tc.wantCode || (tc.wantMsg != "" && (err == nil || !strings.Contains(err.Error(), tc.wantMsg))) {
				t.Fatalf("exit %d (%v), want %d with %q", code, err, tc.wantCode, tc.wantMsg)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(alice, "in", "hello.txt")); !bytes.Equal(b, []byte("hello over TLS\n")) {
		t.Errorf("file not in alice's root: %q", b)
	}
	if b, _ := os.ReadFile(kh); !strings.Contains(string(b), addr+" "+id.Fingerprint) {
		t.Errorf("known_hosts = %q, want the server's fingerprint", b)
	}
	if b, _ := os.ReadFile(changed); strings.Contains(string(b), id.Fingerprint) {
		t.Error("a changed key was pinned without --accept-changed-host-key")
	}
	must(run(ctx, "user", "rm", "reader", "--state", state))
	if code, _ := run(ctx, "user", "rm", "reader", "--state", state); code != exitTransfer {
		t.Errorf("removing a missing user: exit %d, want %d", code, exitTransfer)
	}
}

func dialable(addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// captureStdout runs f and returns what it printed on os.Stdout.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	f()
	os.Stdout = old
	w.Close()
	b, _ := io.ReadAll(r)
	r.Close()
	return string(b)
}

func TestUserCommands(t *testing.T) {
	state := t.TempDir()
	ctx := context.Background()
	users := func() *auth.UsersFile {
		u, err := auth.OpenUsers(filepath.Join(state, auth.UsersFileName))
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	var code int
	var err error
	out := captureStdout(t, func() { code, err = run(ctx, "user", "add", "ci", "--token", "--state", state) })
	tok := strings.TrimSpace(out)
	if code != 0 || len(tok) < 40 {
		t.Fatalf("add --token: exit %d %v, printed %q", code, err, out)
	}
	if _, err := users().Authenticate("ci", tok); err != nil {
		t.Errorf("the printed token does not log in: %v", err)
	}
	withStdin(t, "new password\n", func() { code, err = run(ctx, "user", "passwd", "ci", "--password-stdin", "--bcrypt", "--state", state) })
	if code != 0 {
		t.Fatalf("passwd: %v", err)
	}
	if _, err := users().Authenticate("ci", tok); err == nil {
		t.Error("the old token still works after passwd")
	}
	if _, err := users().Authenticate("ci", "new password"); err != nil {
		t.Errorf("the new password does not work: %v", err)
	}
	// No terminal and no --password-stdin: a clear usage error.
	withStdin(t, "", func() { code, err = run(ctx, "user", "add", "dave", "--state", state) })
	if code != exitUsage || !strings.Contains(err.Error(), "--password-stdin") {
		t.Errorf("add without a password source: exit %d %v", code, err)
	}
	for _, bad := range []string{"../evil", "anonymous", "-x", ""} {
		withStdin(t, "pw\n", func() { code, _ = run(ctx, "user", "add", bad, "--password-stdin", "--state", state) })
		if code != exitUsage {
			t.Errorf("user name %q accepted", bad)
		}
	}
	list := captureStdout(t, func() { run(ctx, "user", "list", "--state", state) })
	if !strings.Contains(list, "ci\tpassword\tread-write") || strings.Contains(list, "dave") {
		t.Errorf("user list = %q", list)
	}
}

// A negative --reconnect is a usage error, said before any dial (QA: it
// was taken as 0).
func TestReconnectNegativeRefused(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, []byte("x"), 0o644)
	for _, cmd := range []string{"send", "get"} {
		args := []string{cmd, "--reconnect", "-1s", f, "127.0.0.1:1/x"}
		if cmd == "get" {
			args = []string{cmd, "--reconnect", "-1s", "127.0.0.1:1/x", t.TempDir()}
		}
		code, err := run(t.Context(), args...)
		if code != exitUsage || err == nil || !strings.Contains(err.Error(), "cannot be negative") {
			t.Errorf("kerf %s: exit %d (%v), want %d saying it cannot be negative", strings.Join(args, " "), code, err, exitUsage)
		}
	}
}

// A send of nothing but missing paths says so before any dial (QA: a
// server that accepted and never answered was waited out first, 15 s).
func TestSendOfMissingPathsDialsNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	missing := filepath.Join(t.TempDir(), "nonexist")
	code, err := run(t.Context(), "send", "--identity", t.TempDir(), missing, ln.Addr().String()+"/x")
	if code != exitTransfer || err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("exit %d (%v), want %d naming the missing file", code, err, exitTransfer)
	}
	select {
	case <-accepted:
		t.Error("the server was dialled for nothing to send")
	default:
	}
}

// A missing --root stops serve from starting even when every user has a
// root of their own, as docs/security.md says (QA ag L2 read otherwise).
func TestServeRefusesMissingRoot(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	base := t.TempDir()
	state, alice := filepath.Join(base, "state"), filepath.Join(base, "alice")
	if err := os.Mkdir(alice, 0o755); err != nil {
		t.Fatal(err)
	}
	withStdin(t, "a password\n", func() {
		if code, err := run(context.Background(), "user", "add", "alice", "--password-stdin", "--root", alice, "--state", state); code != 0 {
			t.Fatalf("user add: %v", err)
		}
	})
	code, err := run(context.Background(), "serve", "--root", filepath.Join(base, "missing"), "--state", state, "--listen", "127.0.0.1:0")
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "--root") {
		t.Errorf("serve with a missing --root: exit %d, %v; want a usage error naming --root", code, err)
	}
}
