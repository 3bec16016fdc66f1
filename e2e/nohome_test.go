package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A client whose HOME is not there (a service user's /nonexistent)
// does not make it to pin a server's key: the key accepted is trusted
// for the command, said unpinned, as ssh does (QA ak: root made
// /nonexistent/.config/kerf).
func TestMissingHomeIsNotMade(t *testing.T) {
	srv := startServer(t, t.TempDir(), serverOpts{})
	home := filepath.Join(t.TempDir(), "nonexistent")
	r := lsWithEnv(t, srv, "HOME="+home, "XDG_CONFIG_HOME=")
	if r.code != 0 || !strings.Contains(r.stderr, "not pinned") {
		t.Errorf("ls with HOME %s missing: %s; want success, the key said not pinned", home, r)
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("HOME %s was made: %v", home, err)
	}
}

// A client that names no user, to a server without anonymous access, is
// told how to name one (QA ao: the README's examples after the first
// name none, and the refusal did not say what was missing).
func TestNoUserSaysHowToGiveOne(t *testing.T) {
	srv := startServer(t, t.TempDir(), serverOpts{})
	if r := lsWithEnv(t, srv, "KERF_USER="); r.code != 3 || !strings.Contains(r.stderr, "-u USER") {
		t.Errorf("ls with no user: %s; want exit 3 naming -u USER", r)
	}
}

// lsWithEnv runs the client's ls of srv's top with env over what
// clientInvocation gives (the last of a name wins).
func lsWithEnv(t *testing.T, srv *server, env ...string) result {
	t.Helper()
	argv, base := clientInvocation(t, srv, nil, "ls", target(srv.addr, "/"))
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kerfBin, argv...)
	cmd.Env = append(base, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return resultOf(t, "ls", cmd.Run(), &stdout, &stderr)
}
