package e2e

import (
	"bytes"
	"context"
	"errors"
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
	argv, env := clientInvocation(t, srv, nil, "ls", target(srv.addr, "/"))
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kerfBin, argv...)
	cmd.Env = append(env, "HOME="+home, "XDG_CONFIG_HOME=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil || !strings.Contains(stderr.String(), "not pinned") {
		t.Errorf("ls with HOME %s missing: %v\n%s\nwant success, the key said not pinned", home, err, stderr.String())
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
	argv, env := clientInvocation(t, srv, nil, "ls", target(srv.addr, "/"))
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kerfBin, argv...)
	cmd.Env = append(env, "KERF_USER=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(stderr.String(), "-u USER") {
		t.Errorf("ls with no user: %v\n%s\nwant exit 3 naming -u USER", err, stderr.String())
	}
}
