package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// After a failed login from an address (anyone's mistyped password), a
// burst of clients with the right one from there all log in: the server
// checks that address's logins one at a time, and each client waits its
// turn as the server says (QA ak: 10 of 12 cron jobs started together
// failed, exit 3, after one try again). A wrong password still fails.
func TestLoginBurstAfterAFailure(t *testing.T) {
	srv := startServer(t, t.TempDir(), serverOpts{})
	argv, env := clientInvocation(t, srv, nil, "ls", target(srv.addr, "/"))
	bad := exec.Command(kerfBin, argv...)
	bad.Env = append(env, "KERF_USER=someone-else", "KERF_PASSWORD=a typo")
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "login failed") {
		t.Fatalf("a wrong password: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 12
	var wg sync.WaitGroup
	fails, outs := make([]string, n), make([]string, n)
	for i := range n {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, kerfBin, argv...)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if outs[i] = string(out); err != nil {
				fails[i] = fmt.Sprintf("client %d: %v\n%s", i, err, out)
			}
		})
	}
	wg.Wait()
	for _, f := range fails {
		if f != "" {
			t.Error(f)
		}
	}
	// Each client said it waited (the server's log names only some of
	// its refusals).
	if waited := strings.Count(strings.Join(outs, ""), "throttles logins from this address"); waited == 0 {
		t.Error("no client was throttled: the test tested nothing")
	}
}

// A send of several sessions after a failed login from the address (a
// typo of anyone's, minutes ago) opens them all: its further sessions
// wait the moment the server asks, as the first does, rather than the
// send going on with fewer (QA as: 2 of 8 sessions, exit 0).
func TestSessionsAfterAFailureAllOpen(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	argv, env := clientInvocation(t, srv, nil, "ls", target(srv.addr, "/"))
	bad := exec.Command(kerfBin, argv...)
	bad.Env = append(env, "KERF_USER=someone-else", "KERF_PASSWORD=a typo")
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "login failed") {
		t.Fatalf("a wrong password: %v\n%s", err, out)
	}
	for i := range 40 {
		writeFile(t, filepath.Join(local, "t", fmt.Sprintf("f%02d", i)), randomBytes(1000+i, uint64(i)))
	}
	r := run(t, srv, local, nil, "send", "--sessions", "6", "-r", "t", srv.addr)
	if r.code != 0 || strings.Contains(r.stderr, "sessions opened") {
		t.Fatalf("send --sessions 6 after a failed login: %s\nwant every session opened", r)
	}
	for i := range 40 {
		sameFile(t, filepath.Join(local, "t", fmt.Sprintf("f%02d", i)), filepath.Join(root, "t", fmt.Sprintf("f%02d", i)))
	}
}
