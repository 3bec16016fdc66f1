package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A get to - writes the file to standard output, in order: over two data
// connections (blocks land out of order) and with a damaged block fetched
// again, the bytes out are the file's.
func TestGetToStdout(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, true)
	data := randomBytes(6<<20+777, 21)
	writeFile(t, filepath.Join(root, "s.bin"), data)

	fs.data.corruptDn.Store(1)
	r := mustRun(t, fs.server, local, nil, "get", "--plain-data", "--streams", "2", target(fs.addr(), "s.bin"), "-")
	if !bytes.Equal([]byte(r.stdout), data) {
		t.Fatalf("standard output: %d bytes, not the file's %d", len(r.stdout), len(data))
	}
	if _, resends, corrupted := fs.data.stats(); len(corrupted) != 1 || resends != 1 {
		t.Errorf("damaged %d blocks, %d resend requests; want 1 and 1", len(corrupted), resends)
	}
	if ents, _ := os.ReadDir(local); len(ents) != 0 {
		t.Errorf("the get left %v in its directory", ents)
	}

	// A missing file: a failure, nothing out.
	if r := run(t, fs.server, local, nil, "get", target(fs.addr(), "missing.bin"), "-"); r.code == 0 || r.stdout != "" {
		t.Errorf("get of a missing file to -: %s", r)
	}
	// What standard output cannot take is refused before connecting.
	for _, args := range [][]string{
		{"-r", target(fs.addr(), "/"), "-"},
		{target(fs.addr(), "s.bin"), target(fs.addr(), "t.bin"), "-"},
		{target(fs.addr(), "*.bin"), "-"},
		{"--resume", target(fs.addr(), "s.bin"), "-"},
	} {
		if r := run(t, fs.server, local, nil, "get", args...); r.code != 2 || r.stdout != "" {
			t.Errorf("get %q: %s; want exit 2 and nothing out", args, r)
		}
	}
	// Said on stderr: standard output is where the file would be (QA:
	// the JSON error went there).
	if r := run(t, fs.server, local, []string{"--json"}, "get", target(fs.addr(), "s.bin"), "-"); r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "--json") {
		t.Errorf("get --json to -: %s; want exit 2, said on stderr alone", r)
	}
}

// A get to - whose connection is cut mid-file: without a redial it fails
// and what went out is the start of the file; with one (the default) the
// new session goes on from what went out, and the output is whole.
func TestGetToStdoutCut(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, true)
	data := randomBytes(12<<20, 22)
	writeFile(t, filepath.Join(root, "c.bin"), data)

	fs.data.cutOnce.Store(true)
	fs.data.cutDown.Store(5 << 20)
	r := run(t, fs.server, local, nil, "get", "--plain-data", "--reconnect", "0", "--streams", "1", target(fs.addr(), "c.bin"), "-")
	if r.code == 0 || len(r.stdout) >= len(data) || !bytes.Equal([]byte(r.stdout), data[:len(r.stdout)]) {
		t.Fatalf("cut, not redialled: exit %d, %d bytes out (want a failure and a prefix of %d)\n%s", r.code, len(r.stdout), len(data), r.stderr)
	}

	fs.data.cutDown.Store(fs.data.downBytes.Load() + 5<<20)
	r = run(t, fs.server, local, nil, "get", "--plain-data", "--streams", "1", target(fs.addr(), "c.bin"), "-")
	if r.code != 0 || !bytes.Equal([]byte(r.stdout), data) {
		t.Fatalf("cut and redialled: exit %d, %d bytes out of %d\n%s", r.code, len(r.stdout), len(data), r.stderr)
	}
	if n := fs.data.cuts.Load(); n != 2 || !strings.Contains(r.stderr, "reconnecting") {
		t.Errorf("the proxy cut %d connections in all (want 2), stderr:\n%s", n, r.stderr)
	}
}

// A get to - cut mid-file whose file changes on the server before the
// redial: the new session finds what went out is not the start of the
// file any more, and the get fails at once, saying so (it cannot take
// back what went out).
func TestGetToStdoutChangedWhileCut(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, true)
	src := filepath.Join(root, "c.bin")
	writeFile(t, src, randomBytes(12<<20, 23))
	fs.data.cutOnce.Store(true)
	fs.data.cutDown.Store(5 << 20)
	fs.data.rateUp.Store(0)
	go func() {
		for fs.data.cuts.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		os.WriteFile(src, randomBytes(12<<20, 24), 0o644)
	}()
	r := run(t, fs.server, local, nil, "get", "--plain-data", "--streams", "1", target(fs.addr(), "c.bin"), "-")
	if r.code != 4 || !strings.Contains(r.stderr, "went to standard output already") {
		t.Fatalf("want exit 4 saying what went to standard output, got exit %d, %d bytes out\n%s", r.code, len(r.stdout), r.stderr)
	}
	// Dialled again once, for the cut; the refusal is the file's, not a
	// lost session to dial again (it was, 24 times over two minutes).
	if n := strings.Count(r.stderr, "reconnecting"); n != 1 {
		t.Errorf("%d reconnections, want 1:\n%s", n, r.stderr)
	}
}

// "-" is standard output even in a directory holding one named "-" (QA:
// refused as a directory destination).
func TestGetToStdoutBesideDirNamedDash(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "s.txt"), []byte("to standard output\n"))
	if err := os.Mkdir(filepath.Join(local, "-"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, srv, local, nil, "get", target(srv.addr, "s.txt"), "-")
	if r.stdout != "to standard output\n" {
		t.Errorf("standard output %q", r.stdout)
	}
	if ents, _ := os.ReadDir(filepath.Join(local, "-")); len(ents) != 0 {
		t.Errorf("stored in the directory named -: %v", ents)
	}
}

// A get to - of a file that changes on the server while it is sent
// fails (exit 4) saying that what went to standard output is not one
// version of the file, not that it was "not stored" (QA: the sender's
// words for a store, after 94 MB had gone to the pipe).
func TestGetToStdoutOfAChangingFile(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	src := filepath.Join(root, "grows.bin")
	writeFile(t, src, randomBytes(16<<20, 25))
	// It grows every 200 ms while the get runs (the 16 MiB take 4 s at
	// 4M): one append alone, at 500 ms, came before the GET on a loaded
	// machine (CI: its login took 400 ms), and the grown file went whole.
	done := make(chan struct{})
	grown := make(chan struct{})
	go func() {
		defer close(grown)
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			f, err := os.OpenFile(src, os.O_APPEND|os.O_WRONLY, 0)
			if err == nil {
				f.Write([]byte("more"))
				f.Close()
			}
		}
	}()
	r := run(t, srv, local, nil, "get", "--limit-rate", "4M", target(srv.addr, "grows.bin"), "-")
	close(done)
	<-grown
	if r.code != 4 || !strings.Contains(r.stderr, "changed while it was being sent") ||
		!strings.Contains(r.stderr, "what went to standard output is not one version of the file") || strings.Contains(r.stderr, "not stored") {
		t.Fatalf("want exit 4 saying standard output has no one version of the file:\nexit %d, %d bytes out\n%s", r.code, len(r.stdout), r.stderr)
	}
}
