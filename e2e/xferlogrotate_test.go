package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server's xferlog, renamed away as logrotate does, is opened again
// by its name on SIGHUP: the next transfers are logged in the new file,
// the earlier ones stay in the old (QA ai: written on under the old name
// for ever, only a restart ended it). So too for a server started under
// nohup, SIGHUP ignored (QA as F5: it stayed ignored, without a word).
func TestXferlogReopenedOnHangup(t *testing.T) {
	for _, wrap := range [][]string{nil, {"nohup"}} {
		t.Run(strings.Join(append([]string{"kerf"}, wrap...), " under "), func(t *testing.T) {
			dir := t.TempDir()
			logPath := filepath.Join(dir, "xferlog")
			root := t.TempDir()
			srv := startServer(t, root, serverOpts{args: []string{"--xferlog", logPath}, wrap: wrap})
			local := t.TempDir()
			writeFile(t, filepath.Join(local, "before.txt"), []byte("before"))
			writeFile(t, filepath.Join(local, "after.txt"), []byte("after"))
			mustRun(t, srv, local, nil, "send", "before.txt", target(srv.addr, "/"))
			if err := os.Rename(logPath, logPath+".1"); err != nil {
				t.Fatal(err)
			}
			srv.cmd.Process.Signal(syscall.SIGHUP)
			waitFor(t, "the server to reopen its xferlog", func() bool { return strings.Contains(srv.stderr.String(), "xferlog "+logPath+" reopened") })
			mustRun(t, srv, local, nil, "send", "after.txt", target(srv.addr, "/"))
			old, _ := os.ReadFile(logPath + ".1")
			cur, err := os.ReadFile(logPath)
			if err != nil || !strings.Contains(string(old), "/before.txt") || strings.Contains(string(old), "/after.txt") || !strings.Contains(string(cur), "/after.txt") || strings.Contains(string(cur), "/before.txt") {
				t.Errorf("rotated log:\n%s\nnew log (%v):\n%s\nwant before.txt in the first, after.txt in the second", old, err, cur)
			}
		})
	}
}

// SIGQUIT prints every goroutine's stack, as Go's runtime does, and
// exits 131 (128 + 3), not the runtime's 2, which is kerf's usage error
// (QA ak).
func TestQuitExits131WithStacks(t *testing.T) {
	srv := startServer(t, t.TempDir(), serverOpts{})
	srv.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-srv.done:
	case <-time.After(30 * time.Second):
		t.Fatal("kerf serve did not exit on SIGQUIT")
	}
	out := srv.stderr.String()
	if code := srv.cmd.ProcessState.ExitCode(); code != 131 || !strings.Contains(out, "goroutine ") || !strings.Contains(out, "SIGQUIT") {
		t.Errorf("on SIGQUIT: exit %d, stderr:\n%.2000s\nwant 131 and the goroutines' stacks", code, out)
	}
}
