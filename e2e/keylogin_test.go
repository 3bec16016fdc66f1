package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var fingerprintRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Public-key login as a script uses it: kerf key makes the client's key,
// kerf user add --key authorizes it on the server, and kerf send logs in
// with no password anywhere (none in the environment, no terminal).
func TestKeyLoginWithoutPassword(t *testing.T) {
	if !features.keyLogin || !features.serveState {
		t.Skip("this kerf has no public-key login (kerf key, --identity)")
	}
	root, local, base := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	id, stranger := filepath.Join(base, "id"), filepath.Join(base, "stranger")

	fp := kerfKey(t, id)
	strangerFP := kerfKey(t, stranger)
	if again := kerfKey(t, id); again != fp {
		t.Fatalf("kerf key printed %s, then %s", fp, again)
	}
	robotRoot := filepath.Join(root, "robot")
	if err := os.Mkdir(robotRoot, 0o755); err != nil { // a server makes no missing root
		t.Fatal(err)
	}
	add := exec.Command(kerfBin, "user", "add", "robot", "--key", fp, "--root", robotRoot, "--state", srv.state)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("kerf user add --key: %v\n%s", err, out)
	}

	data := randomBytes(1<<20+7, 7)
	writeFile(t, filepath.Join(local, "k.bin"), data)
	r := runWithKey(t, srv, local, id, "send", "k.bin", target(srv.addr, "in/"))
	if r.code != 0 {
		t.Fatalf("kerf send with the key: %s", r)
	}
	sameFile(t, filepath.Join(local, "k.bin"), filepath.Join(robotRoot, "in", "k.bin"))

	// A key the server does not list: refused, and the error names it.
	r = runWithKey(t, srv, local, stranger, "ls", target(srv.addr, "in"))
	if r.code != 3 || !strings.Contains(r.stderr, "login failed") || !strings.Contains(r.stderr, strangerFP) {
		t.Errorf("kerf ls with an unknown key: want exit 3 naming %s; %s", strangerFP, r)
	}
}

// kerfKey runs `kerf key --identity dir` and returns the fingerprint.
func kerfKey(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(kerfBin, "key", "--identity", dir)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kerf key: %v", err)
	}
	fp := strings.TrimSpace(string(out))
	if !fingerprintRE.MatchString(fp) {
		t.Fatalf("kerf key printed %q", fp)
	}
	if fi, err := os.Stat(filepath.Join(dir, "key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("client key file: %v, %v", fi, err)
	}
	return fp
}

// runWithKey runs a client command as the user robot with the key in
// identity and no password: KERF_PASSWORD empty, standard input not a
// terminal.
func runWithKey(t *testing.T, srv *server, dir, identity, sub string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, dir, []string{"--quiet"}, sub, append([]string{"--identity", identity}, args...)...)
	cmd.Env = append(cmd.Env, "KERF_USER=robot", "KERF_PASSWORD=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kerf %s: %v", sub, err)
	}
	return r
}

// A user whose root does not exist cannot log in, and the server does
// not make it (a typing error, or a file system not mounted, must not
// become a tree on the disk beneath); kerf user add warns.
func TestMissingRootIsNotMade(t *testing.T) {
	if !features.keyLogin || !features.serveState {
		t.Skip("this kerf has no public-key login (kerf key, --identity)")
	}
	root, local, base := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	id := filepath.Join(base, "id")
	fp := kerfKey(t, id)
	ghostRoot := filepath.Join(base, "not-mounted", "ghost")
	out, err := exec.Command(kerfBin, "user", "add", "robot", "--key", fp, "--root", ghostRoot, "--state", srv.state).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "not a directory yet") {
		t.Fatalf("kerf user add with a missing root: %v, want a warning:\n%s", err, out)
	}
	writeFile(t, filepath.Join(local, "k.bin"), []byte("k"))
	r := runWithKey(t, srv, local, id, "send", "k.bin", target(srv.addr, "in/"))
	if r.code != 3 || !strings.Contains(r.stderr, "cannot open your directory") || strings.Contains(r.stderr, "did not accept the client key") {
		t.Errorf("want exit 3 saying the directory cannot be opened (not a key refusal):\n%s", r)
	}
	noFile(t, filepath.Join(base, "not-mounted"))
}

// A server's users file deleted under it is the server's trouble, said
// as a broken one is: the client is told the server cannot read its
// users file (not that its key is not authorized, nor that its password
// is wrong), exit 3, and the server logs an ERROR naming the file; a
// `kerf user add` that makes the file again lets logins in. (QA: "the
// server did not accept the client key ... run on the server: kerf user
// key add", and only a WARN login failed in the log.)
func TestUsersFileDeletedUnderServer(t *testing.T) {
	if !features.keyLogin || !features.serveState {
		t.Skip("this kerf has no public-key login (kerf key, --identity)")
	}
	root, local, base := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	id := filepath.Join(base, "id")
	fp := kerfKey(t, id)
	addRobot := func() {
		t.Helper()
		out, err := exec.Command(kerfBin, "user", "add", "robot", "--key", fp, "--root", root, "--state", srv.state).CombinedOutput()
		if err != nil {
			t.Fatalf("kerf user add --key: %v\n%s", err, out)
		}
	}
	addRobot()
	if r := runWithKey(t, srv, local, id, "ls", srv.addr); r.code != 0 {
		t.Fatalf("kerf ls with the key: %s", r)
	}
	usersFile := filepath.Join(srv.state, "users.json")
	if err := os.Remove(usersFile); err != nil {
		t.Fatal(err)
	}
	for _, login := range []struct {
		name string
		run  func() result
	}{
		{"key", func() result { return runWithKey(t, srv, local, id, "ls", srv.addr) }},
		{"password", func() result { return run(t, srv, local, nil, "ls", srv.addr) }},
	} {
		r := login.run()
		if r.code != 3 || !strings.Contains(r.stderr, "cannot read its users file") ||
			strings.Contains(r.stderr, "did not accept the client key") || strings.Contains(r.stderr, "kerf user key add") {
			t.Errorf("%s login with the users file deleted: want exit 3, the server cannot read its users file; %s", login.name, r)
		}
	}
	line := waitLogLine(t, srv, "level=ERROR")
	if !strings.Contains(line, usersFile) || !strings.Contains(line, "not any more") {
		t.Errorf("the server's ERROR does not name the missing %s: %s", usersFile, line)
	}
	if strings.Contains(srv.stderr.String(), "login failed") {
		t.Errorf("the server logged a failed login:\n%s", srv.stderr.String())
	}
	addRobot() // the file made again
	if r := runWithKey(t, srv, local, id, "ls", srv.addr); r.code != 0 {
		t.Errorf("kerf ls with the key once the users file is back: %s", r)
	}
}

// A server for anonymous access only, on a fresh state directory, has
// no users file, and needs none: that is not a file gone. Anonymous
// clients get in, and a named login is refused as one (exit 3, login
// failed), not as the server's trouble; a user added later logs in.
func TestAnonymousServerWithoutUsersFile(t *testing.T) {
	if !features.keyLogin || !features.serveState {
		t.Skip("this kerf has no public-key login (kerf key, --identity)")
	}
	root, local, base := t.TempDir(), t.TempDir(), t.TempDir()
	fresh := filepath.Join(base, "state")
	writeFile(t, filepath.Join(root, "pub.txt"), []byte("public\n"))
	// The last --state counts: a state directory no user was added to.
	srv := startServer(t, root, serverOpts{args: []string{"--anonymous", "--state", fresh}})
	if srv.state != fresh {
		t.Fatalf("server state %s, want %s", srv.state, fresh)
	}
	if _, err := os.Stat(filepath.Join(fresh, "users.json")); !os.IsNotExist(err) {
		t.Fatalf("a fresh state directory has a users file: %v", err)
	}
	if r := run(t, srv, local, nil, "ls", "-u", "anonymous", srv.addr); r.code != 0 || !strings.Contains(r.stdout, "pub.txt") {
		t.Fatalf("anonymous ls: %s", r)
	}
	id := filepath.Join(base, "id")
	fp := kerfKey(t, id)
	r := runWithKey(t, srv, local, id, "ls", srv.addr)
	if r.code != 3 || !strings.Contains(r.stderr, "did not accept the client key") || strings.Contains(r.stderr, "cannot read its users file") {
		t.Errorf("key login to a server with no users: want exit 3, the key not accepted; %s", r)
	}
	if strings.Contains(srv.stderr.String(), "level=ERROR") {
		t.Errorf("the server logged an error:\n%s", srv.stderr.String())
	}
	out, err := exec.Command(kerfBin, "user", "add", "robot", "--key", fp, "--root", root, "--state", fresh).CombinedOutput()
	if err != nil {
		t.Fatalf("kerf user add --key: %v\n%s", err, out)
	}
	if r := runWithKey(t, srv, local, id, "ls", srv.addr); r.code != 0 || !strings.Contains(r.stdout, "pub.txt") {
		t.Errorf("a user added to the running anonymous server: %s", r)
	}
}

// A running server's users file that others could write, and that was
// rewritten, is refused as at the server's start: no login with it, an
// ERROR saying why, until its modes are the server's alone again (QA:
// made 0666 after the start, the nobody user's rewrite gave it an
// account with a root of its choosing).
func TestUsersFileMadeWritableUnderServer(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	if r := run(t, srv, local, nil, "ls", srv.addr); r.code != 0 {
		t.Fatalf("kerf ls: %s", r)
	}
	usersFile := filepath.Join(srv.state, "users.json")
	b, err := os.ReadFile(usersFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(usersFile, 0o666); err != nil {
		t.Fatal(err)
	}
	// Rewritten in place, as another user could now (its mode stays).
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(usersFile, append(b, '\n'), 0o666); err != nil {
		t.Fatal(err)
	}
	if r := run(t, srv, local, nil, "ls", srv.addr); r.code != 3 || !strings.Contains(r.stderr, "cannot read its users file") {
		t.Errorf("login with the users file writable by all: want exit 3, the server cannot read its users file; %s", r)
	}
	if line := waitLogLine(t, srv, "level=ERROR"); !strings.Contains(line, "writable by others") {
		t.Errorf("the server's ERROR does not say the file is writable by others: %s", line)
	}
	if err := os.Chmod(usersFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, srv, local, nil, "ls", srv.addr); r.code != 0 {
		t.Errorf("kerf ls once the file is the server's again: %s", r)
	}
}
