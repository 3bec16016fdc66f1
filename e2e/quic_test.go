package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// send --quic and get --quic move a tree over QUIC data streams to and
// from `kerf serve --quic`, byte for byte, and --json's done event says
// so; against a server without QUIC the same commands go over TCP and
// say that on stderr.
func TestQUICTransfers(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{args: []string{"--quic"}})
	tree := filepath.Join(local, "tree")
	files := map[string][]byte{
		"big.bin":       randomBytes(9<<20+13, 1),
		"sub/small.bin": randomBytes(3000, 2),
		"sub/text.log":  logText(200_000, 3),
		"empty":         nil,
	}
	for name, data := range files {
		writeFile(t, filepath.Join(tree, name), data)
	}
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--quic", "--streams", "3", "-r", "tree", srv.addr)
	for name := range files {
		sameFile(t, filepath.Join(tree, name), filepath.Join(root, "tree", name))
	}
	if done := lastDone(t, r); done.Data != "quic" {
		t.Fatalf("send --quic: done %+v, want data quic", done)
	}
	if strings.Contains(r.stderr, "QUIC") {
		t.Fatalf("send --quic to a QUIC server: stderr %q", r.stderr)
	}
	r = mustRun(t, srv, back, []string{"--json"}, "get", "--quic", "-z", "-r", target(srv.addr, "tree"), ".")
	for name := range files {
		sameFile(t, filepath.Join(tree, name), filepath.Join(back, "tree", name))
	}
	if done := lastDone(t, r); done.Data != "quic" || done.WireBytes <= 0 {
		t.Fatalf("get --quic -z: done %+v, want data quic and wire_bytes", done)
	}

	// --congestion is TCP's: over QUIC it is said to go unused (QA y).
	r = mustRun(t, srv, local, nil, "send", "--quic", "--congestion", "reno", "tree/sub/small.bin", srv.addr)
	if !strings.Contains(r.stderr, "--congestion is for TCP data connections") {
		t.Fatalf("send --quic --congestion reno: stderr %q lacks the note", r.stderr)
	}

	// Without --quic, the same server uses TCP (TLS).
	os.RemoveAll(filepath.Join(root, "tree"))
	r = mustRun(t, srv, local, []string{"--json"}, "send", "-r", "tree", srv.addr)
	if done := lastDone(t, r); done.Data != "tls" {
		t.Fatalf("send without --quic: done %+v, want data tls", done)
	}

	// A server without --quic: TCP, and a note.
	plainSrv := startServer(t, t.TempDir(), serverOpts{})
	r = mustRun(t, plainSrv, local, []string{"--json"}, "send", "--quic", "tree/big.bin", plainSrv.addr)
	if done := lastDone(t, r); done.Data != "tls" {
		t.Fatalf("send --quic to a server without QUIC: done %+v, want data tls", done)
	}
	if !strings.Contains(r.stderr, "does not offer QUIC") {
		t.Fatalf("send --quic to a server without QUIC: stderr %q lacks the note", r.stderr)
	}
}

// A client killed mid-file over QUIC leaves a partial that `send
// --resume --quic` completes from where it stopped; a server killed
// mid-file over QUIC fails the client with exit 4, not a hang.
func TestQUICInterrupted(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{args: []string{"--quic"}})
	const size = 128 << 20
	data := randomBytes(size, 21)
	src := filepath.Join(local, "big.bin")
	writeFile(t, src, data)
	dst := filepath.Join(root, "big.bin")
	part := partName(dst)

	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, local, nil, "send", "--quic", "big.bin", srv.addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the partial's first blocks", func() bool { return hasPrefix(part, data[:2<<20]) })
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	kept := waitStable(t, part)
	if kept <= 0 || kept >= size {
		t.Fatalf("partial holds %d bytes, want some but not all of %d", kept, size)
	}
	noFile(t, dst)
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--quic", "--resume", "big.bin", srv.addr)
	d := checkDoneEvent(t, r, "big.bin", size, kept)
	if d.Offset <= 0 {
		t.Errorf("resumed at %d, want past the start", d.Offset)
	}
	if done := lastDone(t, r); done.Data != "quic" {
		t.Fatalf("resume: done %+v, want data quic", done)
	}
	sameFile(t, src, dst)
	noFile(t, part)

	// The server dies mid-file. Its QUIC streams would wait out their
	// idle timeout (ten minutes) on their own: the client must notice the
	// control connection's end well before.
	os.Remove(dst)
	kctx, kcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer kcancel()
	cmd = kerfCmd(t, kctx, srv, local, nil, "send", "--quic", "--reconnect", "0", "big.bin", srv.addr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the partial's first blocks", func() bool { return hasPrefix(part, data[:2<<20]) })
	srv.cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if kctx.Err() != nil {
		t.Fatalf("the client hung after the server died:\n%s", out.String())
	}
	t.Logf("client after the server died: %s", out.String())
	if code := cmd.ProcessState.ExitCode(); code != 4 || !strings.Contains(out.String(), "kerf:") {
		t.Fatalf("want exit 4 with a message, got %d:\n%s", code, out.String())
	}
	noFile(t, dst)
}
