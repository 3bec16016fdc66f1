package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/auth"
)

// Public-key login through the command line: kerf key, kerf user add
// --key, kerf user key add|rm|list, and clients that log in with the key
// when they have no password.
func TestCLIKeyLogin(t *testing.T) {
	os.Unsetenv("KERF_PASSWORD")
	t.Setenv("KERF_USER", "")
	base := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config")) // no default client key
	t.Setenv("KERF_IDENTITY", "")
	state, root, robotRoot := filepath.Join(base, "state"), filepath.Join(base, "root"), filepath.Join(base, "robot")
	for _, d := range []string{root, robotRoot} { // a server makes no missing root
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	idDir, otherDir := filepath.Join(base, "id"), filepath.Join(base, "other")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var code int
	var err error
	// runIn runs a command with an empty, non-terminal standard input and
	// returns what it printed on standard output.
	runIn := func(args ...string) string {
		t.Helper()
		var out string
		withStdin(t, "", func() { out = captureStdout(t, func() { code, err = run(ctx, args...) }) })
		return out
	}
	must := func(args ...string) string {
		t.Helper()
		out := runIn(args...)
		if code != 0 {
			t.Fatalf("kerf %s: exit %d: %v", strings.Join(args, " "), code, err)
		}
		return out
	}

	fp := strings.TrimSpace(must("key", "--identity", idDir))
	if _, err := auth.CheckFingerprint(fp); err != nil {
		t.Fatalf("kerf key printed %q: %v", fp, err)
	}
	if fi, err := os.Stat(filepath.Join(idDir, auth.KeyFileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("client key: %v %v", fi, err)
	}
	if fi, err := os.Stat(idDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("identity directory: %v %v", fi, err)
	}
	if again := strings.TrimSpace(must("key", "--identity", idDir)); again != fp {
		t.Errorf("second kerf key printed %q, first %q", again, fp)
	}
	otherFP := strings.TrimSpace(must("key", "--identity", otherDir))

	// Users: robot logs in only with the key; alice has a password and
	// gets a key later.
	must("user", "add", "robot", "--key", fp, "--root", robotRoot, "--state", state)
	withStdin(t, "alice pw\n", func() {
		code, err = run(ctx, "user", "add", "alice", "--password-stdin", "--root", root, "--state", state)
	})
	if code != 0 {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		args []string
		want int // usage: the command line; transfer: the users file refused it
	}{
		{[]string{"user", "add", "x", "--key", "sha256:1234", "--state", state}, exitUsage},
		{[]string{"user", "add", "x", "--key", strings.TrimPrefix(fp, "sha256:"), "--state", state}, exitUsage},
		{[]string{"user", "key", "add", "alice", "md5:00", "--state", state}, exitUsage},
		{[]string{"user", "key", "add", "nobody", fp, "--state", state}, exitTransfer},
		{[]string{"user", "key", "add", "alice", "--state", state}, exitUsage},
		{[]string{"user", "key", "rm", "robot", fp, "--state", state}, exitTransfer}, // robot's only way in
	} {
		runIn(bad.args...)
		if code != bad.want {
			t.Errorf("kerf %s: exit %d (%v), want %d", strings.Join(bad.args, " "), code, err, bad.want)
		}
	}
	must("user", "key", "add", "alice", otherFP, fp, "--state", state)
	must("user", "key", "rm", "alice", fp, "--state", state)
	if keys := must("user", "key", "list", "alice", "--state", state); keys != otherFP+"\n" {
		t.Errorf("alice's keys: %q, want %q", keys, otherFP+"\n")
	}
	list := must("user", "list", "--state", state)
	if !strings.Contains(list, "robot\tkey\tread-write") || !strings.Contains(list, "alice\tpassword+key\tread-write") {
		t.Errorf("user list = %q", list)
	}
	u, _ := auth.OpenUsers(filepath.Join(state, auth.UsersFileName))
	if _, err := u.Authenticate("robot", ""); err == nil {
		t.Error("robot, added with --key only, logs in with an empty password")
	}

	addr := startServe(t, ctx, state, root)
	src := filepath.Join(base, "hello.txt")
	os.WriteFile(src, []byte("hello by key\n"), 0o644)
	kh := filepath.Join(base, "known_hosts")
	client := func(identity, user string, args ...string) []string {
		a := []string{"--quiet", args[0], "--user", user, "--known-hosts", kh, "--accept-new-host-key"}
		if identity != "" {
			a = append(a, "--identity", identity)
		}
		return append(a, args[1:]...)
	}
	// No password anywhere, no terminal: the key logs in.
	must(client(idDir, "robot", "send", src, addr+"/in/")...)
	if b, _ := os.ReadFile(filepath.Join(robotRoot, "in", "hello.txt")); !bytes.Equal(b, []byte("hello by key\n")) {
		t.Errorf("file not in robot's root: %q", b)
	}
	// KERF_IDENTITY names the directory too.
	t.Setenv("KERF_IDENTITY", otherDir)
	must(client("", "alice", "ls", addr)...)
	os.Setenv("KERF_IDENTITY", "")
	// A password, when given, is used even with a key.
	pw := filepath.Join(base, "pw")
	os.WriteFile(pw, []byte("alice pw\n"), 0o600)
	must(client(idDir, "alice", "ls", "--password-file", pw, addr)...)

	// No credentials: exit 3 (QA ak: 2 said the command line was
	// wrong), before connecting.
	runIn(client(filepath.Join(base, "nokey"), "robot", "ls", addr)...)
	if code != exitConnect || !strings.Contains(err.Error(), "no client key there") {
		t.Errorf("--identity without a key: exit %d %v", code, err)
	}
	runIn(client("", "robot", "ls", addr)...) // the default directory has no key
	if code != exitConnect || !strings.Contains(err.Error(), "no password for robot") {
		t.Errorf("no key and no password: exit %d %v", code, err)
	}
	// A key others can read is not used (and then there is no password).
	loose := filepath.Join(base, "loose")
	must("key", "--identity", loose)
	os.Chmod(filepath.Join(loose, auth.KeyFileName), 0o644)
	runIn(client(loose, "robot", "ls", addr)...)
	if code != exitConnect {
		t.Errorf("key readable by others: exit %d %v", code, err)
	}
	// Last, since a failure throttles the address: a key the server does
	// not list for the user is refused, and the error names it.
	runIn(client(otherDir, "robot", "ls", addr)...)
	if code != exitConnect || !strings.Contains(err.Error(), "login failed") ||
		!strings.Contains(err.Error(), "did not accept the client key "+otherFP) || !strings.Contains(err.Error(), "kerf user key add robot "+otherFP) {
		t.Errorf("refused key: exit %d %v", code, err)
	}
}
