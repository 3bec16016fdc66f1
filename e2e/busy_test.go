package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A server at its session limit says so: `kerf ls` fails at once
// naming the limit (exit 3), and a send dials again within --reconnect
// until a session is free, then goes (QA: twelve sends at once to one
// server, three sessions each, failed four of them, "closed the
// connection during the TLS handshake").
func TestServerAtItsSessionLimit(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{args: []string{"--max-sessions-per-addr", "1", "--handshake-timeout", "3s"}})
	writeFile(t, filepath.Join(local, "a.txt"), []byte("hello"))
	// A session logged in holds the one slot (a connection that has not
	// logged in gives it up to the next).
	release := holdSession(t, srv)
	r := run(t, srv, local, nil, "ls", target(srv.addr, ""))
	if r.code != 3 || !strings.Contains(r.stderr, "session limit") {
		t.Fatalf("ls at the limit: %s; want exit 3 naming the session limit", r)
	}
	time.AfterFunc(2*time.Second, release)
	r = run(t, srv, local, []string{"--json"}, "send", "--reconnect", "60s", "a.txt", target(srv.addr, "in/"))
	if r.code != 0 || !strings.Contains(r.stderr, "trying again") {
		t.Fatalf("send at the limit: %s; want it to try again and succeed", r)
	}
	// --json hears of the wait too (QA: nothing until the error).
	if evs := eventsNamed(parseEvents(t, r.stdout), "reconnecting"); len(evs) == 0 || !strings.Contains(evs[0].Error, "session limit") || evs[0].Seconds <= 0 {
		t.Errorf("send --json at the limit: no reconnecting event naming the limit:\n%s", r.stdout)
	}
	sameFile(t, filepath.Join(local, "a.txt"), filepath.Join(root, "in/a.txt"))
}

// A send waiting for a free session goes on waiting through the
// refused dials of a server restarted meanwhile, within --reconnect
// (QA: the first "connection refused" ended it, exit 3).
func TestWaitingForASessionOutlastsARestart(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{args: []string{"--max-sessions-per-addr", "1", "--handshake-timeout", "30s"}})
	writeFile(t, filepath.Join(local, "a.txt"), []byte("hello"))
	release := holdSession(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, local, []string{"--json"}, "send", "--reconnect", "60s", "a.txt", target(srv.addr, "in/"))
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the send to wait for a session", func() bool { return strings.Contains(out.String(), "trying again") })
	srv.cmd.Process.Kill()
	<-srv.done
	release()
	time.Sleep(1500 * time.Millisecond) // its next dial is refused
	again := exec.Command(kerfBin, "serve", "--root", root, "--listen", srv.addr, "--data-listen", "127.0.0.1:0", "--state", srv.state)
	again.Stderr = &syncBuffer{}
	if err := again.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { again.Process.Kill(); again.Wait() }()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("send waiting through a restart: %v\n%s", err, out.String())
	}
	sameFile(t, filepath.Join(local, "a.txt"), filepath.Join(root, "in/a.txt"))
}

// holdSession logs a client in to srv and keeps it there, a send from
// standard input whose input has not come, until release.
func holdSession(t *testing.T, srv *server) (release func()) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	cmd := kerfCmd(t, ctx, srv, t.TempDir(), nil, "send", "-", target(srv.addr, "held.bin"))
	cmd.Stdin = pr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	logins := strings.Count(srv.stderr.String(), "msg=login ")
	waitFor(t, "the holding session's login", func() bool { return strings.Count(srv.stderr.String(), "msg=login ") > logins })
	var once sync.Once
	release = func() {
		once.Do(func() {
			pw.Close()
			cmd.Wait()
			cancel()
		})
	}
	t.Cleanup(release)
	return release
}

// Sends started at once from one host against a server whose limits
// they exceed all go: the ones refused dial again (the review: with
// connections not logged in given up to newcomers, 6 of 8 sends were
// cut off in their logins and failed, exit 3).
func TestSendsAtOnceBeyondTheLimitsAllGo(t *testing.T) {
	for _, limit := range []string{"--max-sessions", "--max-sessions-per-addr"} {
		t.Run(limit, func(t *testing.T) {
			root, local := t.TempDir(), t.TempDir()
			srv := startServer(t, root, serverOpts{args: []string{limit, "2"}})
			const n = 8
			for i := range n {
				writeFile(t, filepath.Join(local, fmt.Sprintf("f%d.bin", i)), randomBytes(300_000, uint64(i)))
			}
			var wg sync.WaitGroup
			results := make([]result, n)
			for i := range n {
				wg.Go(func() {
					results[i] = run(t, srv, local, nil, "send", "--limit-rate", "2M", fmt.Sprintf("f%d.bin", i), target(srv.addr, "in/"))
				})
			}
			wg.Wait()
			for i, r := range results {
				if r.code != 0 {
					t.Errorf("send %d: %s", i, r)
					continue
				}
				sameFile(t, filepath.Join(local, fmt.Sprintf("f%d.bin", i)), filepath.Join(root, "in", fmt.Sprintf("f%d.bin", i)))
			}
		})
	}
}

// A --no-login-penalty that would shut an address out after a mistake
// or two, or a negative one, is a usage error (QA x: 1h was taken, and
// one wrong password then locked the address out for 10 minutes).
func TestServeNoLoginPenaltyBounds(t *testing.T) {
	for _, v := range []string{"-1s", "6s", "1h"} {
		out, err := exec.Command(kerfBin, "serve", "--root", t.TempDir(), "--state", t.TempDir(), "--listen", "127.0.0.1:0", "--no-login-penalty", v).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--no-login-penalty") {
			t.Errorf("--no-login-penalty %s: %v, %q; want exit 2 naming the flag", v, err, out)
		}
	}
}
