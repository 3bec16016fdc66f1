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
