package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
