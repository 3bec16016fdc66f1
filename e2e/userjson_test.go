package e2e

import (
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kerf/auth"
)

// userEvent is a --json event of the user and key commands.
type userEvent struct {
	Event       string   `json:"event"`
	Error       string   `json:"error"`
	Name        string   `json:"name"`
	Login       string   `json:"login"`
	Keys        []string `json:"keys"`
	Fingerprint string   `json:"fingerprint"`
	Access      string   `json:"access"`
	Root        string   `json:"root"`
	Changed     string   `json:"changed"`
	Token       string   `json:"token"`
	UsersFile   string   `json:"users_file"`
	Identity    string   `json:"identity"`
	Created     bool     `json:"created"`
	Warning     string   `json:"warning"`
}

// parseUserEvents decodes a user or key command's --json output
// strictly: every line one object with only the known fields.
func parseUserEvents(t *testing.T, stdout string) []userEvent {
	t.Helper()
	return decodeLines(t, stdout, func(e userEvent) string { return e.Event }, "user", "key", "key_added", "key_removed", "done", "error")
}

// With --json the user and key commands print JSON events on success
// too, as every other command does, and nothing else on stdout: a
// listing's user or key per line, a key_added or key_removed per key,
// and last done, carrying what the text said (a new token, a warning,
// kerf key's fingerprint). (QA: they printed plain text, only their
// errors were JSON.)
func TestJSONUserAndKeyCommands(t *testing.T) {
	base, home := t.TempDir(), t.TempDir()
	state, root, id := filepath.Join(base, "state"), t.TempDir(), filepath.Join(base, "id")
	usersFile := filepath.Join(state, "users.json")
	ghost := filepath.Join(base, "not-there")
	kerf := func(stdin string, args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(kerfBin, append([]string{"--json"}, args...)...)
		cmd.Env = append(cmd.Environ(), "HOME="+home, "KERF_USER=")
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("kerf --json %q: %v\n%s%s", args, err, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}

	// kerf key: the fingerprint, where the key is, whether it was made.
	out, _ := kerf("", "key", "--identity", id)
	evs := parseUserEvents(t, out)
	if len(evs) != 1 || evs[0].Event != "done" || !fingerprintRE.MatchString(evs[0].Fingerprint) || evs[0].Identity != id || !evs[0].Created {
		t.Fatalf("kerf --json key: %q", out)
	}
	fp := evs[0].Fingerprint
	if out, _ := kerf("", "key", "--identity", id); !reflect.DeepEqual(parseUserEvents(t, out), []userEvent{{Event: "done", Fingerprint: fp, Identity: id}}) {
		t.Errorf("kerf --json key, the key there: %q", out)
	}

	var token string
	for _, c := range []struct {
		args  []string
		stdin string
		want  []userEvent // Token: "?" for any token
	}{
		{[]string{"user", "add", "alice", "--password-stdin", "--root", root}, "a password\n",
			[]userEvent{{Event: "done", Name: "alice", Login: "password", Access: "read-write", Root: root, UsersFile: usersFile}}},
		{[]string{"user", "add", "robot", "--key", fp, "--read-only", "--root", ghost}, "",
			[]userEvent{{Event: "done", Name: "robot", Login: "key", Keys: []string{fp}, Access: "read-only", Root: ghost, UsersFile: usersFile,
				Warning: ghost + " is not a directory yet; robot cannot log in until it is"}}},
		{[]string{"user", "add", "ci", "--token"}, "",
			[]userEvent{{Event: "done", Name: "ci", Login: "token", Access: "read-write", Token: "?", UsersFile: usersFile}}},
		{[]string{"user", "passwd", "ci", "--token"}, "",
			[]userEvent{{Event: "done", Name: "ci", Changed: "token", Token: "?", UsersFile: usersFile}}},
		{[]string{"user", "passwd", "alice", "--password-stdin"}, "another one\n",
			[]userEvent{{Event: "done", Name: "alice", Changed: "password", UsersFile: usersFile}}},
		{[]string{"user", "key", "add", "alice", fp}, "",
			[]userEvent{{Event: "key_added", Name: "alice", Fingerprint: fp}, {Event: "done", Name: "alice", UsersFile: usersFile}}},
		{[]string{"user", "key", "list", "alice"}, "",
			[]userEvent{{Event: "key", Name: "alice", Fingerprint: fp}, {Event: "done", Name: "alice", UsersFile: usersFile}}},
		{[]string{"user", "list"}, "",
			[]userEvent{
				{Event: "user", Name: "alice", Login: "password+key", Keys: []string{fp}, Access: "read-write", Root: root},
				{Event: "user", Name: "ci", Login: "token", Access: "read-write"}, // no root: the server's --root
				{Event: "user", Name: "robot", Login: "key", Keys: []string{fp}, Access: "read-only", Root: ghost},
				{Event: "done", UsersFile: usersFile},
			}},
		{[]string{"user", "key", "rm", "alice", fp}, "",
			[]userEvent{{Event: "key_removed", Name: "alice", Fingerprint: fp}, {Event: "done", Name: "alice", UsersFile: usersFile}}},
		{[]string{"user", "rm", "alice"}, "",
			[]userEvent{{Event: "done", Name: "alice", UsersFile: usersFile}}},
	} {
		out, stderr := kerf(c.stdin, append(c.args, "--state", state)...)
		got := parseUserEvents(t, out)
		for i := range got {
			if i < len(c.want) && c.want[i].Token == "?" && got[i].Token != "" {
				token = got[i].Token
				got[i].Token = "?"
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("kerf --json %q:\n got %+v\nwant %+v", c.args, got, c.want)
		}
		if stderr != "" {
			t.Errorf("kerf --json %q said on stderr what its events say: %q", c.args, stderr)
		}
	}
	// The token the JSON gave is the one saved.
	u, err := auth.OpenUsers(usersFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Authenticate("ci", token); err != nil {
		t.Errorf("the token of passwd's done event does not log in: %v", err)
	}
	// A users file not there is said in done, not taken for no users
	// in silence.
	noState := filepath.Join(base, "typo")
	out, _ = kerf("", "user", "list", "--state", noState)
	want := []userEvent{{Event: "done", UsersFile: filepath.Join(noState, "users.json"),
		Warning: "no users file at " + filepath.Join(noState, "users.json") + " (no users yet: kerf user add)"}}
	if got := parseUserEvents(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("kerf --json user list of no users file: %+v, want %+v", got, want)
	}
	// A failure is still one error event (exit 4: refused).
	cmd := exec.Command(kerfBin, "--json", "user", "rm", "nosuch", "--state", state)
	cmd.Env = append(cmd.Environ(), "HOME="+home)
	b, err := cmd.Output()
	var ee *exec.ExitError
	if evs := parseUserEvents(t, string(b)); !errors.As(err, &ee) || len(evs) != 1 || evs[0].Event != "error" || !strings.Contains(evs[0].Error, "no such user") {
		t.Errorf("kerf --json user rm nosuch: %v, %q", err, b)
	}
}
