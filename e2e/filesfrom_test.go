package e2e

import (
	"bytes"
	"kerf/internal/peertest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `send --files-from LIST [DIR] HOST/DEST` sends the listed paths, each
// under its own path at DEST (an absolute one without its leading /): a
// listed directory is made there (with -r sent whole), duplicates go
// once, --exclude still applies, a missing entry fails alone (exit 4),
// and an entry outside DIR refuses the whole command before anything
// is sent (exit 2).
func TestSendFilesFrom(t *testing.T) {
	root, local, outside := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	src := filepath.Join(local, "src")
	for _, f := range []string{"a/b/x.txt", "a/y.txt", "c/z.txt", "top.txt", "skip.o", "new\nline.txt"} {
		writeFile(t, filepath.Join(src, f), []byte("data of "+f))
	}
	if err := os.Mkdir(filepath.Join(src, "empty"), 0o750); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(outside, "abs.txt")
	writeFile(t, abs, []byte("from elsewhere"))

	list := filepath.Join(local, "list")
	writeFile(t, list, []byte("a/b/x.txt\r\n./top.txt\n\nempty\n"+abs+"\nskip.o\na/./b/x.txt\n"))
	mustRun(t, srv, local, nil, "send", "--files-from", list, "--exclude", "*.o", "src", target(srv.addr, "d1"))
	d1 := filepath.Join(root, "d1")
	sameFile(t, filepath.Join(src, "a/b/x.txt"), filepath.Join(d1, "a/b/x.txt"))
	sameFile(t, filepath.Join(src, "top.txt"), filepath.Join(d1, "top.txt"))
	sameFile(t, abs, filepath.Join(d1, strings.TrimPrefix(abs, "/")))
	if fi, err := os.Stat(filepath.Join(d1, "empty")); err != nil || !fi.IsDir() {
		t.Errorf("listed directory empty not made: %v", err)
	} else if fi.Mode().Perm() != 0o750 {
		t.Errorf("listed directory empty has mode %v, want 0750 as here", fi.Mode().Perm())
	}
	for _, f := range []string{"a/y.txt", "c", "skip.o"} {
		if _, err := os.Lstat(filepath.Join(d1, f)); err == nil {
			t.Errorf("%s is at the server, though not listed or excluded", f)
		}
	}

	// With -r a listed directory goes whole; standard input with
	// --from0 carries a name with a line end whole (which a kerf server
	// then refuses by name, as it refuses every control character); the
	// list's paths are relative to this directory when none is given.
	r := runWithInput(t, srv, src, bytes.NewReader([]byte("a\x00new\nline.txt\x00top.txt\x00")), []string{"--json"}, "send", "-r", "--files-from", "-", "--from0", target(srv.addr, "d2"))
	if r.code != 4 || !strings.Contains(r.stderr, `new\x0aline.txt`) || !strings.Contains(r.stdout, "control character") {
		t.Fatalf("send -r --files-from - --from0: %s; want exit 4, the name with a line end refused by the server", r)
	}
	d2 := filepath.Join(root, "d2")
	for _, f := range []string{"a/b/x.txt", "a/y.txt", "top.txt"} {
		sameFile(t, filepath.Join(src, f), filepath.Join(d2, f))
	}
	if evs := parseEvents(t, r.stdout); len(evs) == 0 || evs[len(evs)-1].Event != "error" || evs[len(evs)-1].Files == nil || *evs[len(evs)-1].Files != 3 {
		t.Errorf("last event not an error event counting 3 files:\n%s", r.stdout)
	}

	// A missing entry fails alone.
	writeFile(t, list, []byte("top.txt\nmissing.txt\n"))
	if r := run(t, srv, local, nil, "send", "--files-from", list, "src", target(srv.addr, "d3")); r.code != 4 || !strings.Contains(r.stderr, "missing.txt") {
		t.Errorf("a missing entry: %s, want exit 4 naming it", r)
	}
	sameFile(t, filepath.Join(src, "top.txt"), filepath.Join(root, "d3", "top.txt"))

	// Refused before anything is sent.
	for _, tc := range []struct {
		list string
		args []string
		want string
	}{
		{"top.txt\n../list\n", []string{"src"}, "outside"},
		{"top.txt\n", []string{"src", "src"}, "at most one local directory"},
		{"top.txt\n", []string{"src/top.txt"}, "not a directory"},
	} {
		writeFile(t, list, []byte(tc.list))
		r := run(t, srv, local, nil, "send", append(append([]string{"--files-from", list}, tc.args...), target(srv.addr, "d4"))...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("--files-from %q %v: %s, want exit 2 saying %q", tc.list, tc.args, r, tc.want)
		}
	}
	if r := run(t, srv, local, nil, "send", "--from0", "src/top.txt", target(srv.addr, "d4")); r.code != 2 {
		t.Errorf("--from0 without --files-from: %s, want exit 2", r)
	}
	if _, err := os.Lstat(filepath.Join(root, "d4")); err == nil {
		t.Error("a refused command sent something (d4 exists)")
	}

	// An empty list sends nothing, and is no failure.
	writeFile(t, list, []byte("\n\n"))
	if r := run(t, srv, local, []string{"--json"}, "send", "--files-from", list, target(srv.addr, "d5")); r.code != 0 {
		t.Errorf("empty list: %s, want exit 0", r)
	} else if d := lastDone(t, r); d.Files == nil || *d.Files != 0 {
		t.Errorf("empty list: done %+v, want 0 files", d)
	}
}

// --files-from with --remove-source-files moves the listed files (their
// directories stay), and each goes under its path.
func TestSendFilesFromRemovesSources(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	data := map[string][]byte{"in/a/1.dat": []byte("one"), "in/a/2.dat": []byte("two"), "in/3.dat": []byte("three")}
	for f, d := range data {
		writeFile(t, filepath.Join(local, f), d)
	}
	list := filepath.Join(local, "list")
	writeFile(t, list, []byte("in/a/1.dat\nin/3.dat\n"))
	mustRun(t, srv, local, nil, "send", "--files-from", list, "--remove-source-files", target(srv.addr, "spool"))
	for _, f := range []string{"in/a/1.dat", "in/3.dat"} {
		got, err := os.ReadFile(filepath.Join(root, "spool", f))
		if err != nil || !bytes.Equal(got, data[f]) {
			t.Errorf("spool/%s: %q, %v; want %q", f, got, err, data[f])
		}
		if _, err := os.Lstat(filepath.Join(local, f)); err == nil {
			t.Errorf("%s was moved but is still here", f)
		}
	}
	if _, err := os.Stat(filepath.Join(local, "in/a/2.dat")); err != nil {
		t.Errorf("in/a/2.dat, not listed, is gone: %v", err)
	}
}

// serial send --files-from to C-Kermit: each listed file under its path
// (C-Kermit makes the directories), the unlisted one not sent.
func TestSerialSendFilesFromToCKermit(t *testing.T) {
	a, b := ptyPair(t)
	local, ckdir := t.TempDir(), t.TempDir()
	for _, f := range []string{"a/b/x.bin", "a/y.bin", "top.bin"} {
		writeFile(t, filepath.Join(local, f), randomBytes(20000, uint64(len(f))))
	}
	list := filepath.Join(t.TempDir(), "list")
	writeFile(t, list, []byte("a/b/x.bin\ntop.bin\n"))
	ck := peertest.CKermit(t, b, "cd "+ckdir+"\nreceive", ckdir)
	r := run(t, nil, local, nil, "serial", "send", "--line", a, "--files-from", list)
	if r.code != 0 {
		t.Fatalf("serial send --files-from: %s\nC-Kermit:\n%s", r, ck.Report())
	}
	if err := ck.Wait(commandTimeout); err != nil {
		t.Fatalf("C-Kermit: %v\n%s", err, ck.Report())
	}
	for _, f := range []string{"a/b/x.bin", "top.bin"} {
		sameFile(t, filepath.Join(local, f), filepath.Join(ckdir, f))
	}
	if _, err := os.Lstat(filepath.Join(ckdir, "a/y.bin")); err == nil {
		t.Error("a/y.bin, not listed, was sent")
	}
}
