package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// command finds the command at path (serial server) in a new app.
func command(t *testing.T, path ...string) *cli.Command {
	t.Helper()
	cmds := newApp().Commands
	var found *cli.Command
	for _, name := range path {
		found = nil
		for _, c := range cmds {
			if c.Name == name {
				found = c
			}
		}
		if found == nil {
			t.Fatalf("no command %q", strings.Join(path, " "))
		}
		cmds = found.Subcommands
	}
	return found
}

// flagUsage is the help text of cmd's flag name ("" when it has none).
func flagUsage(cmd *cli.Command, name string) (string, bool) {
	for _, f := range cmd.Flags {
		if names := f.Names(); len(names) > 0 && names[0] == name {
			if d, ok := f.(cli.DocGenerationFlag); ok {
				return d.GetUsage(), true
			}
			return "", true
		}
	}
	return "", false
}

// A serial server fetches nothing: get's --recursive, which it took and
// ignored, is not among its flags (QA ag L5), and its --resume says what
// it does for a server.
func TestSerialServerFlags(t *testing.T) {
	srv := command(t, "serial", "server")
	if _, ok := flagUsage(srv, "recursive"); ok {
		t.Error("serial server has --recursive")
	}
	u, ok := flagUsage(srv, "resume")
	if !ok || !strings.Contains(u, "REGET") {
		t.Errorf("serial server --resume: %q, want a server's words (REGET)", u)
	}
}

// Only get's --exclude says it needs a kerf server (QA ag L6: send's
// help said so of a get).
func TestExcludeHelp(t *testing.T) {
	for _, tc := range []struct {
		path []string
		note bool
	}{
		{[]string{"send"}, false},
		{[]string{"serial", "send"}, false},
		{[]string{"get"}, true},
	} {
		u, ok := flagUsage(command(t, tc.path...), "exclude")
		if !ok {
			t.Fatalf("%s has no --exclude", strings.Join(tc.path, " "))
		}
		if got := strings.Contains(u, "kerf server") || strings.Contains(u, "a get"); got != tc.note {
			t.Errorf("%s --exclude: %q", strings.Join(tc.path, " "), u)
		}
	}
}

// The help states the bounds the flags are checked against (QA ag L8).
func TestHelpStatesBounds(t *testing.T) {
	for _, tc := range []struct {
		path       []string
		flag, want string
	}{
		{[]string{"send"}, "write-behind", fmt.Sprintf("0-%d", maxWriteBehind)},
		{[]string{"serve"}, "write-behind", fmt.Sprintf("0-%d", maxWriteBehind)},
		{[]string{"serve"}, "timer-slack", "at most " + maxTimerSlack.String()},
		{[]string{"serial", "receive"}, "timeout", "more than 0"},
	} {
		u, _ := flagUsage(command(t, tc.path...), tc.flag)
		if !strings.Contains(u, tc.want) {
			t.Errorf("%s --%s: %q, want %q in it", strings.Join(tc.path, " "), tc.flag, u, tc.want)
		}
	}
}

// serial --timeout 0 is refused: it took the default, 5 s, where
// C-Kermit's 0 is no timeout at all (QA ag L8).
func TestSerialTimeoutZero(t *testing.T) {
	code, err := run(context.Background(), "serial", "receive", "--timeout", "0", "--line", "/dev/null", "--dir", t.TempDir())
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "--timeout") {
		t.Errorf("serial receive --timeout 0: exit %d, %v; want a usage error naming --timeout", code, err)
	}
}

// A --password-file that cannot be read is named as the flag (QA ag
// L13: "open /nonexist: no such file or directory").
func TestPasswordFileNamed(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(t.TempDir(), "nonexistent"), empty, t.TempDir()} {
		code, err := run(context.Background(), "ls", "-u", "alice", "--password-file", f, "127.0.0.1:1/")
		if code != exitConnect || err == nil || !strings.HasPrefix(err.Error(), "--password-file") {
			t.Errorf("--password-file %s: exit %d, %v; want 3 (no credentials), naming the flag", f, code, err)
		}
	}
}

// A --listen or --data-listen that is no address is a usage error (QA
// ag L14: exit 3, "could not connect"); a port in use stays exit 3.
func TestServeListenAddress(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	root := t.TempDir()
	serve := func(args ...string) (int, error) {
		state := filepath.Join(t.TempDir(), "state")
		return run(context.Background(), append([]string{"serve", "--root", root, "--state", state}, args...)...)
	}
	for _, args := range [][]string{
		{"--listen", "bogus"},
		{"--listen", "127.0.0.1:99999"},
		{"--listen", "127.0.0.1:0", "--data-listen", "bogus"},
		{"--listen", "127.0.0.1:0", "--data-listen", "127.0.0.1:x"},
	} {
		if code, err := serve(args...); code != exitUsage || err == nil || !strings.Contains(err.Error(), "listen") {
			t.Errorf("serve %q: exit %d, %v; want a usage error naming the flag", args, code, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if code, err := serve("--listen", ln.Addr().String()); code != exitConnect {
		t.Errorf("serve on a port in use: exit %d, %v; want %d", code, err, exitConnect)
	}
}
