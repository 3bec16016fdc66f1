package e2e

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
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
	// A connection that never speaks holds the one session until the
	// handshake timeout drops it (accepted before the next, which
	// queues behind it).
	held, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	r := run(t, srv, local, nil, "ls", target(srv.addr, ""))
	if r.code != 3 || !strings.Contains(r.stderr, "session limit") {
		t.Fatalf("ls at the limit: %s; want exit 3 naming the session limit", r)
	}
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
	held, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
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
	held.Close()
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
