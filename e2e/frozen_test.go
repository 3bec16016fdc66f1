package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A server that stops answering without closing its connections (its
// host frozen, or cut off with no reset: SIGSTOP here) is given up on
// after the client's --idle-timeout, with exit 4 and words saying so,
// and the partial is kept for --resume, which then completes the file:
// TCP alone would wait on it for ever. Both ways: the client's data
// stuck in full socket buffers (send), and the client waiting for data
// (get), and the file data in the control connection of a classic
// session, whose writes block (send --classic).
func TestClientGivesUpOnFrozenServer(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{classic: true})
	const size = 48 << 20
	data := randomBytes(size, 77)
	writeFile(t, filepath.Join(local, "up.bin"), data)
	writeFile(t, filepath.Join(local, "classic.bin"), data)
	writeFile(t, filepath.Join(root, "down.bin"), data)
	for _, c := range []struct {
		what, dir, part string
		args            []string
	}{
		{"send", local, filepath.Join(root, ".up.bin.kerf-part"), []string{"send", "up.bin", srv.addr}},
		{"get", back, filepath.Join(back, ".down.bin.kerf-part"), []string{"get", target(srv.addr, "down.bin"), "."}},
		// The file data in the control connection: the client blocks
		// writing it.
		{"send --classic", local, filepath.Join(root, ".classic.bin.kerf-part"), []string{"send", "--classic", "classic.bin", srv.addr}},
	} {
		t.Run(c.what, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			// Not dialling again: a frozen server takes the TLS
			// handshake's 15 s each try (reconnect_test.go dials).
			args := append([]string{c.args[0], "--limit-rate", "8M", "--idle-timeout", "2s", "--reconnect", "0"}, c.args[1:]...)
			cmd := kerfCmd(t, ctx, srv, c.dir, nil, args[0], args[1:]...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the partial's first megabyte", func() bool { return fileSize(c.part) > 1<<20 })
			srv.cmd.Process.Signal(syscall.SIGSTOP)
			err := cmd.Wait()
			srv.cmd.Process.Signal(syscall.SIGCONT)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(stderr.String(), "sent nothing") {
				t.Fatalf("kerf %s from a frozen server: %v, stderr %q; want exit 4 saying the server sent nothing", c.what, err, stderr.String())
			}
			if ctx.Err() != nil {
				t.Fatal("the client did not give up by itself")
			}
			mustRun(t, srv, c.dir, nil, c.args[0], append([]string{"--resume"}, c.args[1:]...)...)
			switch c.what {
			case "send":
				sameFile(t, filepath.Join(local, "up.bin"), filepath.Join(root, "up.bin"))
			case "get":
				sameFile(t, filepath.Join(root, "down.bin"), filepath.Join(back, "down.bin"))
			default:
				sameFile(t, filepath.Join(local, "classic.bin"), filepath.Join(root, "classic.bin"))
			}
		})
	}
}
