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
	"time"
)

// `kerf user rm` reaches the sessions already in, not only the next
// login: a transfer under way when its user is removed stops, the client
// told why, and the partial is kept as for any cut. (QA: a removed
// user's session went on until it ended by itself.)
func TestRemovedUserSessionEnds(t *testing.T) {
	if !features.serveState {
		t.Skip("this kerf has no users")
	}
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "slow.bin"), randomBytes(4<<20, 31))

	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, local, nil, "send", "--limit-rate", "256K", "--reconnect", "0", "slow.bin", srv.addr)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitLogLine(t, srv, "login")
	waitFor(t, "the file's partial to grow", func() bool { return fileSize(partName(filepath.Join(root, "slow.bin"))) > 0 })

	rm := exec.Command(kerfBin, "user", "rm", "--state", srv.state, testUser)
	if out, err := rm.CombinedOutput(); err != nil {
		t.Fatalf("kerf user rm: %v\n%s", err, out)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("the send finished after its user was removed:\n%s", errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the send went on 30 s after its user was removed:\n%s", errb.String())
	}
	if !strings.Contains(errb.String(), "your account was removed") {
		t.Errorf("the client was not told why:\n%s", errb.String())
	}
	waitLogLine(t, srv, "the login no longer stands")
	noFile(t, filepath.Join(root, "slow.bin"))
	if fileSize(partName(filepath.Join(root, "slow.bin"))) <= 0 {
		t.Error("the partial was not kept")
	}
	// And the next login fails.
	if r := run(t, srv, local, nil, "send", "slow.bin", srv.addr); r.code == 0 {
		t.Errorf("a removed user logged in again: %s", r)
	}
}

// `kerf user set` changes a user's root and access and keeps its
// password: the next login lands in the new root, and read-only access
// refuses a send (QA: the only way was rm and add again, the password
// with it).
func TestUserSetChangesRootAndAccess(t *testing.T) {
	if !features.serveState {
		t.Skip("this kerf has no users")
	}
	root, local, other := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "a.txt"), []byte("moved root"))
	set := func(args ...string) {
		t.Helper()
		out, err := exec.Command(kerfBin, append([]string{"user", "set", "--state", srv.state}, append(args, testUser)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kerf user set %q: %v\n%s", args, err, out)
		}
	}
	set("--root", other)
	mustRun(t, srv, local, nil, "send", "a.txt", srv.addr)
	sameFile(t, filepath.Join(local, "a.txt"), filepath.Join(other, "a.txt"))
	noFile(t, filepath.Join(root, "a.txt"))

	set("--read-only")
	if r := run(t, srv, local, nil, "send", "a.txt", target(srv.addr, "b.txt")); r.code != 4 || !strings.Contains(r.stderr, "read-only") {
		t.Errorf("a send by a read-only user: want exit 4 saying read-only:\n%s", r)
	}
	noFile(t, filepath.Join(other, "b.txt"))
	set("--read-write", "--root", "")
	mustRun(t, srv, local, nil, "send", "a.txt", target(srv.addr, "b.txt"))
	sameFile(t, filepath.Join(local, "a.txt"), filepath.Join(root, "b.txt"))
	// --read-only=false gives writing back too (QA ao: it changed
	// nothing, and said the user was still read-only).
	set("--read-only")
	set("--read-only=false")
	mustRun(t, srv, local, nil, "send", "a.txt", target(srv.addr, "c.txt"))
	sameFile(t, filepath.Join(local, "a.txt"), filepath.Join(root, "c.txt"))
}

// A user's root changed under a transfer ends its session, and the
// client does not dial again into the new root with the rest of it
// (review): the user is told, the partial kept where it was.
func TestUserSetEndsTheSessionNoReconnect(t *testing.T) {
	if !features.serveState {
		t.Skip("this kerf has no users")
	}
	root, local, other := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "slow.bin"), randomBytes(4<<20, 32))
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, local, nil, "send", "--limit-rate", "256K", "slow.bin", srv.addr)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the file's partial to grow", func() bool { return fileSize(partName(filepath.Join(root, "slow.bin"))) > 0 })
	if out, err := exec.Command(kerfBin, "user", "set", "--state", srv.state, "--root", other, testUser).CombinedOutput(); err != nil {
		t.Fatalf("kerf user set: %v\n%s", err, out)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(errb.String(), "your account was changed") {
		t.Fatalf("want exit 4 saying the account was changed: %v\n%s", err, errb.String())
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Errorf("the new root got %d entries: the client dialled again into it", len(entries))
	}
}
