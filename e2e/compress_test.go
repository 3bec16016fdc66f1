package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// logText is compressible data, like a log file.
func logText(n, seed int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "2026-11-30T12:%02d:%02dZ host%d kerf[%d]: stored file %d of the batch\n", i/60%60, i%60, seed, 1649+i%7, i)
	}
	return b.Bytes()[:n]
}

// send -z and get -z move a tree compressed both ways, byte for byte;
// --json's done event says how many bytes travelled, and a server that
// refuses compression still takes the files, uncompressed.
func TestCompressedTransfers(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	tree := filepath.Join(local, "logs")
	files := map[string][]byte{
		"a.log":       logText(3<<20+77, 1),
		"sub/b.log":   logText(40_000, 2),
		"sub/rnd.bin": randomBytes(1<<20+5, 3),
		"empty":       nil,
	}
	var total int64
	for name, data := range files {
		writeFile(t, filepath.Join(tree, name), data)
		total += int64(len(data))
	}
	r := mustRun(t, srv, local, []string{"--json"}, "send", "-z", "--congestion", "reno", "-r", "logs", srv.addr)
	for name := range files {
		sameFile(t, filepath.Join(tree, name), filepath.Join(root, "logs", name))
	}
	done := lastDone(t, r)
	if done.Bytes != total || done.WireBytes <= 0 || done.WireBytes > total/2 {
		t.Fatalf("send -z: done %+v: want bytes %d and wire_bytes well under half", done, total)
	}

	r = mustRun(t, srv, back, []string{"--json"}, "get", "-z", "-r", target(srv.addr, "logs"), ".")
	for name := range files {
		sameFile(t, filepath.Join(tree, name), filepath.Join(back, "logs", name))
	}
	if done := lastDone(t, r); done.WireBytes <= 0 || done.WireBytes > total/2 {
		t.Fatalf("get -z: done %+v: want wire_bytes well under half of %d", done, total)
	}

	// Without -z nothing is compressed, and the done event says nothing.
	os.RemoveAll(filepath.Join(root, "logs"))
	r = mustRun(t, srv, local, []string{"--json"}, "send", "-r", "logs", srv.addr)
	if done := lastDone(t, r); done.WireBytes != 0 {
		t.Fatalf("send without -z: done %+v has wire_bytes", done)
	}

	refusing := startServer(t, t.TempDir(), serverOpts{args: []string{"--no-compression"}})
	r = mustRun(t, refusing, local, []string{"--json"}, "send", "-z", "logs/a.log", refusing.addr)
	if done := lastDone(t, r); done.WireBytes != 0 || done.Bytes != int64(len(files["a.log"])) {
		t.Fatalf("send -z to a server that refuses: done %+v", done)
	}
}

// A compressed block damaged on the way (plaintext data, so the proxy
// can reach the payload) is asked for again by offset alone and arrives
// whole; in both directions.
func TestCorruptedCompressedBlockIsResent(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, true)
	src := filepath.Join(local, "c.log")
	writeFile(t, src, logText(5<<20+3, 4))

	fs.data.corruptUp.Store(1)
	mustRun(t, fs.server, local, nil, "send", "-z", "c.log", fs.addr())
	sameFile(t, src, filepath.Join(root, "c.log"))
	_, resends, corrupted := fs.data.stats()
	if len(corrupted) != 1 || resends != 1 {
		t.Fatalf("damaged %d blocks, %d resend requests; want 1 and 1", len(corrupted), resends)
	}

	fs.data.corruptDn.Store(1)
	mustRun(t, fs.server, back, nil, "get", "-z", target(fs.addr(), "c.log"), ".")
	sameFile(t, src, filepath.Join(back, "c.log"))
	_, resends, corrupted = fs.data.stats()
	if len(corrupted) != 2 || resends != 2 {
		t.Fatalf("damaged %d blocks, %d resend requests in all; want 2 and 2", len(corrupted), resends)
	}
}

// lastDone returns the closing done event of a --json run.
func lastDone(t *testing.T, r result) event {
	t.Helper()
	evs := parseEvents(t, r.stdout)
	if len(evs) == 0 || evs[len(evs)-1].Event != "done" {
		t.Fatalf("no closing done event:\n%s", r.stdout)
	}
	return evs[len(evs)-1]
}
