package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Command lines that are wrong exit 2 (usage) with a message naming the
// mistake, never 3 ("could not connect"), which a script would take for
// a network failure.
func TestUsageMistakesExit2(t *testing.T) {
	for _, args := range [][]string{
		{"recieve", "x"},
		{"help", "recieve"},
		{"user", "del", "bob"},
		{"serial", "recv"},
		{"--log-level", "debgu", "ls", "127.0.0.1:1/x"},
		{"serial", "receive", "--line", "/dev/null", "--speed", "-5"},
		{"serial", "receive", "--line", "/dev/null", "--parity", "weird"},
		{"serial", "receive", "--line", "/dev/null", "--flow", "weird"},
		{"serial", "receive", "--line", "/dev/null", "--stdio"},
		{"serial", "receive", "--line", "/dev/null", "--timeout", "-1s"},
		{"serial", "receive", "--line", "/dev/null", "in/"},
		{"serial", "server", "--line", "/dev/null", "somedir"},
		{"serial", "receive", "--line", "/dev/null", "--start-of-packet", "13"},
		{"serial", "receive", "--line", "/dev/null", "--start-of-packet", "0"},
		{"serial", "receive", "--line", "/dev/null", "--packet-length", "19"},
		{"serial", "receive", "--line", "/dev/null", "--packet-length", "9025"},
		{"serial", "receive", "--line", "/dev/null", "--start-of-packet", "65"},
		{"ls", "--streams", "x", "127.0.0.1:1/x"},
		{"ls", "--streams", "0", "127.0.0.1:1/x"},
		{"serial", "send", "--stdio", "--files-from", "-"},
		{"serial", "send", "--line", "/dev/null", "--from0", "x"},
		{"serial", "send", "--line", "/dev/null", "--files-from", "/nonexistent/list"},
		{"send", "--files-from", "/nonexistent/list", "127.0.0.1:1/x"},
		{"send", "--files-from", "/dev/null", "a", "b", "127.0.0.1:1/x"},
	} {
		cmd := exec.Command(kerfBin, args...)
		cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.HasPrefix(string(out), "kerf: ") {
			t.Errorf("kerf %q: %v, output %q; want exit 2 with a message", args, err, out)
		}
	}
}

// A duration flag given a bare number is told it wants its unit; a
// whole-number flag given a fraction is not (review).
func TestUnitlessDurationSaysSo(t *testing.T) {
	for _, c := range []struct {
		args []string
		hint bool
	}{
		{[]string{"send", "--reconnect", "90", "a", "127.0.0.1:1/x"}, true},
		{[]string{"serve", "--idle-timeout", "5"}, true},
		{[]string{"send", "--sessions", "1.5", "a", "127.0.0.1:1/x"}, false},
	} {
		cmd := exec.Command(kerfBin, c.args...)
		cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || strings.Contains(string(out), "a duration takes its unit") != c.hint {
			t.Errorf("kerf %q: %v, output %q; want exit 2, a word of units %v", c.args, err, out, c.hint)
		}
	}
}

// Flags may come between a user command's name and its other words:
// `kerf user key add NAME --state DIR FINGERPRINT`.
func TestUserKeyAddFlagsBetweenWords(t *testing.T) {
	state, root, id := t.TempDir(), t.TempDir(), t.TempDir()
	home := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command(kerfBin, args...)
		cmd.Env = append(cmd.Environ(), "HOME="+home)
		cmd.Stdin = strings.NewReader("a good long password\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kerf %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("user", "add", "bob", "--root", root, "--state", state, "--password-stdin")
	fp := strings.TrimSpace(run("key", "--identity", id))
	if i := strings.Index(fp, "sha256:"); i >= 0 {
		fp = strings.Fields(fp[i:])[0]
	}
	run("user", "key", "add", "bob", "--state", state, fp)
	if out := run("user", "list", "--state", state); !strings.Contains(out, "key") {
		t.Fatalf("user list after key add: %q", out)
	}
}

// A get of several filespecs whose files share a name keeps the first
// and refuses the second (exit 4, naming it), instead of storing one
// over the other and reporting success.
func TestGetSameNameTwiceRefused(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "a", "one.txt"), []byte("from a\n"))
	writeFile(t, filepath.Join(root, "b", "one.txt"), []byte("from b\n"))
	r := run(t, srv, local, nil, "get", target(srv.addr, "a/one.txt"), target(srv.addr, "b/one.txt"), "out")
	if r.code != 4 || !strings.Contains(r.stderr, "already received") {
		t.Fatalf("get of two one.txt: exit %d, stderr %q; want 4 naming the second", r.code, r.stderr)
	}
	sameFile(t, filepath.Join(root, "a", "one.txt"), filepath.Join(local, "out", "one.txt"))
}

// rm (and mkdir, rmdir, ls) with several paths tries each, as rm(1)
// does: a missing one is named and fails the command (exit 4), and the
// others are still done.
func TestRemoteCommandsTryEveryPath(t *testing.T) {
	root := t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "gone.txt"), []byte("x"))
	r := run(t, srv, t.TempDir(), nil, "rm", target(srv.addr, "missing.txt"), target(srv.addr, "gone.txt"))
	if r.code != 4 || !strings.Contains(r.stderr, "missing.txt") {
		t.Fatalf("rm missing gone: exit %d, stderr %q; want 4 naming missing.txt", r.code, r.stderr)
	}
	noFile(t, filepath.Join(root, "gone.txt"))
	os.MkdirAll(filepath.Join(root, "d1"), 0o755)
	os.MkdirAll(filepath.Join(root, "d2"), 0o755)
	writeFile(t, filepath.Join(root, "d1", "a"), []byte("1"))
	writeFile(t, filepath.Join(root, "d2", "b"), []byte("2"))
	r = mustRun(t, srv, t.TempDir(), nil, "ls", target(srv.addr, "d1"), target(srv.addr, "d2"))
	if !strings.Contains(r.stdout, "d1:") || !strings.Contains(r.stdout, "d2:") {
		t.Fatalf("ls d1 d2 without headings:\n%s", r.stdout)
	}
}

// With --json, every command's failure is one JSON error event, the
// user and key commands' too.
func TestJSONErrorEventEverywhere(t *testing.T) {
	state := t.TempDir()
	for _, args := range [][]string{
		{"--json", "user", "passwd", "nobody", "--state", state, "--token"},
		{"--json", "user", "key", "add", "nobody", "--state", state, "sha256:" + strings.Repeat("0", 64)},
		{"--json", "ls", "127.0.0.1:1/x"},
	} {
		cmd := exec.Command(kerfBin, args...)
		cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir())
		out, _ := cmd.Output()
		evs := parseEvents(t, string(out))
		if len(evs) != 1 || evs[0].Event != "error" || evs[0].Error == "" {
			t.Errorf("kerf %q: stdout %q, want one error event", args, out)
		}
	}
}

// Flags may follow the arguments, as with rsync: the command's own and
// the global ones (--json) alike. (They were taken for a host or a
// local directory.)
func TestFlagsAfterArguments(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "tree", "x"), randomBytes(5000, 3))
	writeFile(t, filepath.Join(local, "tree", "empty"), nil)
	r := run(t, srv, local, nil, "send", "tree", target(srv.addr, "in"), "-r", "--json")
	if r.code != 0 {
		t.Fatalf("send with trailing -r --json: %s", r)
	}
	if evs := parseEvents(t, r.stdout); len(evs) == 0 || evs[len(evs)-1].Event != "done" {
		t.Errorf("--json after the arguments printed no done event:\n%s", r.stdout)
	}
	// And the events have their counts, zeros too.
	for _, want := range []string{`{"event":"file_done","name":"tree/empty","size":0,"bytes":0`, `{"event":"done","bytes":5000,`, `"files":2`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--json output lacks %s:\n%s", want, r.stdout)
		}
	}
	sameFile(t, filepath.Join(local, "tree", "x"), filepath.Join(root, "in", "tree", "x"))
	r = run(t, srv, back, nil, "get", target(srv.addr, "in/tree/x"), ".", "--resume")
	if r.code != 0 {
		t.Fatalf("get with trailing --resume: %s", r)
	}
	sameFile(t, filepath.Join(local, "tree", "x"), filepath.Join(back, "x"))
	if _, err := os.Stat(filepath.Join(back, "--resume")); err == nil {
		t.Error("get made a directory called --resume")
	}
}

// --streams takes "auto", the default its help names (it was refused
// as not a number, QA), as well as a number.
func TestStreamsAuto(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "a.bin"), randomBytes(3<<20, 5))
	for _, v := range []string{"auto", "AUTO", "3"} {
		if r := run(t, srv, local, nil, "send", "--streams", v, "a.bin", target(srv.addr, v+".bin")); r.code != 0 {
			t.Fatalf("send --streams %s: %s", v, r)
		}
		sameFile(t, filepath.Join(local, "a.bin"), filepath.Join(root, v+".bin"))
	}
}

// user add says how the user logs in as user list says it: a token is
// not "a password" (QA).
func TestUserAddSaysHowTheUserLogsIn(t *testing.T) {
	state, root := t.TempDir(), t.TempDir() // a root holding the state is refused
	for _, c := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"user", "add", "tok", "--token", "--state", state, "--root", root}, "", "(logs in with a token)"},
		{[]string{"user", "add", "pw", "--password-stdin", "--state", state, "--root", root}, "secret one\n", "(logs in with a password)"},
		{[]string{"user", "passwd", "tok", "--token", "--state", state}, "", "changed the token of tok"},
		{[]string{"user", "passwd", "pw", "--password-stdin", "--state", state}, "secret two\n", "changed the password of pw"},
	} {
		cmd := exec.Command(kerfBin, c.args...)
		cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir())
		cmd.Stdin = strings.NewReader(c.stdin)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("kerf %q: %v, output %q; want it to say %s", c.args, err, out, c.want)
		}
	}
}

// user passwd of a user that does not exist says so before it reads a
// password (it said "reading the password: EOF", QA).
func TestUserPasswdOfNobody(t *testing.T) {
	cmd := exec.Command(kerfBin, "user", "passwd", "nobody", "--password-stdin", "--state", t.TempDir())
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(string(out), "no such user: nobody") {
		t.Errorf("user passwd nobody: %v, output %q; want exit 4, no such user", err, out)
	}
}

// A user command the users file refuses (no such user, one there
// already, a key there or not there, a user's only way in) exits 4, a
// command that ran and failed, as `kerf rm` of a missing remote file
// does; 2 (usage) is for a wrong command line: a bad name or
// fingerprint, a missing word. (QA: `kerf user rm nosuch` exited 2.)
func TestUserCommandsRefusedExit4(t *testing.T) {
	state, home := t.TempDir(), t.TempDir()
	id := filepath.Join(t.TempDir(), "id")
	fp := kerfKey(t, id)
	other := "sha256:" + strings.Repeat("0", 64)
	kerf := func(stdin string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(kerfBin, append(args, "--state", state)...)
		cmd.Env = append(cmd.Environ(), "HOME="+home)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatalf("kerf %q: %v", args, err)
		}
		return 0, string(out)
	}
	if code, out := kerf("", "user", "add", "robot", "--key", fp); code != 0 {
		t.Fatalf("user add robot: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		args  []string
		stdin string
		code  int
		msg   string
	}{
		{[]string{"user", "rm", "nosuch"}, "", 4, "no such user: nosuch"},
		{[]string{"user", "add", "robot", "--password-stdin"}, "a password\n", 4, "user already exists: robot"},
		{[]string{"user", "add", "robot", "--key", other}, "", 4, "user already exists: robot"},
		// Without a terminal, and no password given: the user's being
		// there is said, not the prompt's failure (QA).
		{[]string{"user", "add", "robot"}, "", 4, "user already exists: robot"},
		{[]string{"user", "set", "nosuch", "--read-only"}, "", 4, "no such user: nosuch"},
		{[]string{"user", "set", "robot"}, "", 2, "nothing to change"},
		{[]string{"user", "set", "robot", "--read-only", "--read-write"}, "", 2, "one or the other"},
		{[]string{"user", "passwd", "nosuch", "--token"}, "", 4, "no such user: nosuch"},
		{[]string{"user", "key", "add", "nosuch", other}, "", 4, "no such user: nosuch"},
		{[]string{"user", "key", "add", "robot", fp}, "", 4, "already has key"},
		{[]string{"user", "key", "rm", "robot", other}, "", 4, "has no key"},
		{[]string{"user", "key", "rm", "robot", fp}, "", 4, "only way to log in"},
		{[]string{"user", "key", "list", "nosuch"}, "", 4, "no such user: nosuch"},
		// The command line's mistakes stay usage errors.
		{[]string{"user", "rm", "../evil"}, "", 2, "bad user name"},
		{[]string{"user", "add", "anonymous", "--key", other}, "", 2, "reserved"},
		{[]string{"user", "key", "add", "robot", "sha256:12"}, "", 2, "sha256"},
		{[]string{"user", "rm"}, "", 2, "usage"},
	} {
		code, out := kerf(c.stdin, c.args...)
		if code != c.code || !strings.Contains(out, c.msg) {
			t.Errorf("kerf %q: exit %d, output %q; want exit %d saying %q", c.args, code, out, c.code, c.msg)
		}
	}
}

// kerf key that cannot make or read its key fails as a refused user
// command does, exit 4, naming the directory; its command line's
// mistakes stay exit 2 (QA g: exit 2 for a directory it could not make).
func TestKeyNotMadeExit4(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "file"), []byte("in the way"))
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"key", "--identity", filepath.Join(dir, "file", "id")}, 4, filepath.Join(dir, "file", "id")},
		{[]string{"key", "--identity", filepath.Join(dir, "id"), "extra"}, 2, "usage"},
	} {
		cmd := exec.Command(kerfBin, c.args...)
		cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("kerf %q: %v", c.args, err)
		}
		if code != c.code || !strings.Contains(string(out), c.msg) {
			t.Errorf("kerf %q: exit %d, output %q; want exit %d saying %q", c.args, code, out, c.code, c.msg)
		}
	}
}

// The server's state (its key, its users) is out of every root: serve
// with a --root holding it, and user add with such a --root, refuse
// (QA: `kerf serve` in a home directory served ~/.config/kerf/server,
// and a user could read the key and rewrite the users file).
func TestStateOutOfEveryRoot(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, ".config/kerf/server")
	for _, args := range [][]string{
		{"serve", "--root", home, "--state", state, "--listen", "127.0.0.1:0"},
		{"user", "add", "alice", "--password-stdin", "--root", home, "--state", state},
	} {
		cmd := exec.Command(kerfBin, args...)
		cmd.Env = append(cmd.Environ(), "HOME="+home)
		cmd.Stdin = strings.NewReader("a password\n")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "state") {
			t.Errorf("kerf %q: %v, output %q; want exit 2 naming the state", args, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "users.json")); !os.IsNotExist(err) {
		t.Errorf("a user was added: %v", err)
	}
}

// The server's xferlog names a file a get's client refused by its path
// in the tree, as it names those sent, and counts none of its bytes:
// the client took none (QA: "one.txt" with the file's whole size).
func TestXferLogOfAFileTheClientRefused(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	xferlog := filepath.Join(t.TempDir(), "xferlog")
	srv := startServer(t, root, serverOpts{args: []string{"--xferlog", xferlog}})
	writeFile(t, filepath.Join(root, "a", "one.bin"), randomBytes(1<<20, 94))
	writeFile(t, filepath.Join(root, "b", "one.bin"), randomBytes(1<<20, 95))
	if r := run(t, srv, local, nil, "get", target(srv.addr, "a/one.bin"), target(srv.addr, "b/one.bin"), "out"); r.code != 4 {
		t.Fatalf("get of two one.bin: %s", r)
	}
	var lines []string
	waitFor(t, "two xferlog lines", func() bool {
		b, _ := os.ReadFile(xferlog)
		lines = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		return len(lines) == 2
	})
	slices.Sort(lines) // either may be written first
	for _, want := range []string{fmt.Sprintf(" %d /a/one.bin b _ o r ", 1<<20), " 0 /b/one.bin b _ o r "} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, want) }) {
			t.Errorf("xferlog lacks %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	if !strings.HasSuffix(lines[0], " c") && !strings.HasSuffix(lines[1], " c") {
		t.Errorf("no complete line:\n%s", strings.Join(lines, "\n"))
	}
}

// A server whose users file others may read starts, warning that its
// password hashes are open to them (QA: not a word).
func TestServeWarnsOfAReadableUsersFile(t *testing.T) {
	if !features.serveState {
		t.Skip("this kerf has no users")
	}
	// The file is made readable between its making and the start.
	chmod := `for a; do if [ "$prev" = --state ]; then chmod 644 "$a/users.json"; fi; prev=$a; done; exec "$@"`
	srv := startServer(t, t.TempDir(), serverOpts{wrap: []string{"sh", "-c", chmod, "sh"}})
	if !strings.Contains(srv.stderr.String(), "users.json has mode 0644: others may read its password hashes") {
		t.Errorf("no warning:\n%s", srv.stderr.String())
	}
	// Still serving.
	mustRun(t, srv, t.TempDir(), nil, "ls", srv.addr)
	// And none for one that is private.
	srv = startServer(t, t.TempDir(), serverOpts{})
	if strings.Contains(srv.stderr.String(), "password hashes") {
		t.Errorf("a warning for a private users file:\n%s", srv.stderr.String())
	}
}

// ls, mkdir, rm, rmdir and mv take the data path's flags without showing
// them, and read none of them from the environment: a bad
// KERF_LIMIT_RATE stopped kerf ls over a flag its help does not list
// (QA ag L7). send still reads it.
func TestRemoteCommandsReadNoDataEnv(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "a.txt"), []byte("a"))
	for _, kv := range [][2]string{
		{"KERF_LIMIT_RATE", "abc"}, {"KERF_BLOCK_SIZE", "abc"}, {"KERF_WRITE_BEHIND", "-1"},
		{"KERF_CONGESTION", "no-such-algorithm"}, {"KERF_COMPRESS", "maybe"}, {"KERF_IN_BAND", "maybe"}, {"KERF_QUIC", "maybe"},
	} {
		t.Setenv(kv[0], kv[1])
	}
	mustRun(t, srv, local, nil, "mkdir", target(srv.addr, "d"))
	mustRun(t, srv, local, nil, "ls", target(srv.addr, "d"))
	mustRun(t, srv, local, nil, "mv", target(srv.addr, "d"), target(srv.addr, "e"))
	mustRun(t, srv, local, nil, "rmdir", target(srv.addr, "e"))
	if r := run(t, srv, local, nil, "send", "a.txt", srv.addr); r.code != 2 {
		t.Errorf("send with bad data-path variables: %s; want exit 2", r)
	}
	noFile(t, filepath.Join(root, "a.txt"))
}
