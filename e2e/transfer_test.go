package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A file of several data blocks goes up and comes back identical, and
// the --json events describe it.
func TestSendAndGetSingleFile(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	data := randomBytes(3<<20+12345, 1) // 12+ blocks, the last one short
	writeFile(t, filepath.Join(local, "one.bin"), data)

	r := mustRun(t, srv, local, []string{"--json"}, "send", "one.bin", srv.addr)
	sameFile(t, filepath.Join(local, "one.bin"), filepath.Join(root, "one.bin"))
	noFile(t, partName(filepath.Join(root, "one.bin")))
	d := checkDoneEvent(t, r, "one.bin", int64(len(data)), 0)
	if d.CRC32C == "" {
		t.Errorf("a dual-channel file_done carries no crc32c")
	}
	checkCRC(t, d, filepath.Join(local, "one.bin"))

	r = mustRun(t, srv, back, []string{"--json"}, "get", target(srv.addr, "one.bin"), ".")
	sameFile(t, filepath.Join(local, "one.bin"), filepath.Join(back, "one.bin"))
	checkCRC(t, checkDoneEvent(t, r, "one.bin", int64(len(data)), 0), filepath.Join(local, "one.bin"))
}

// In classic mode (no data channel) the engine computes no CRC for
// D-packet transfers (kermit/send.go sendFile leaves Event.CRC32C zero);
// --json's file_done said "crc32c":"00000000". It must be absent or right.
func TestJSONClassicCRC(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{classic: true})
	writeFile(t, filepath.Join(local, "c.bin"), randomBytes(50000, 3))
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--classic", "c.bin", srv.addr)
	checkCRC(t, checkDoneEvent(t, r, "c.bin", 50000, 0), filepath.Join(local, "c.bin"))
	sameFile(t, filepath.Join(local, "c.bin"), filepath.Join(root, "c.bin"))
}

// checkDoneEvent asserts well-formed --json output of a one-file transfer:
// file_start, then file_done with the size, bytes and offset given, then
// done; the CRC, if given, is 8 hex digits.
func checkDoneEvent(t *testing.T, r result, name string, size, offset int64) event {
	t.Helper()
	evs := parseEvents(t, r.stdout)
	if len(evs) < 3 {
		t.Fatalf("want at least file_start, file_done, done; got %s", r.stdout)
	}
	if evs[0].Event != "file_start" || evs[0].Name != name {
		t.Errorf("first event %+v, want file_start of %s", evs[0], name)
	}
	last := evs[len(evs)-1]
	if last.Event != "done" || last.Error != "" {
		t.Errorf("last event %+v, want done", last)
	}
	done := eventsNamed(evs, "file_done")
	if len(done) != 1 {
		t.Fatalf("%d file_done events, want 1:\n%s", len(done), r.stdout)
	}
	d := done[0]
	if d.Name != name || d.Size == nil || *d.Size != size || d.Offset != offset || d.Bytes != size-offset {
		t.Errorf("file_done %+v (size %v), want name %s size %d offset %d bytes %d", d, d.Size, name, size, offset, size-offset)
	}
	if d.CRC32C != "" && (len(d.CRC32C) != 8 || strings.Trim(d.CRC32C, "0123456789abcdef") != "") {
		t.Errorf("file_done crc32c %q, want 8 hex digits", d.CRC32C)
	}
	for _, e := range eventsNamed(evs, "progress") {
		if e.Name != name || e.Bytes < 0 || e.Bytes > size {
			t.Errorf("bad progress event %+v", e)
		}
	}
	if len(eventsNamed(evs, "file_error")) != 0 {
		t.Errorf("unexpected file_error:\n%s", r.stdout)
	}
	return d
}

func TestEmptyFile(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "empty"), nil)
	r := mustRun(t, srv, local, []string{"--json"}, "send", "empty", srv.addr)
	sameFile(t, filepath.Join(local, "empty"), filepath.Join(root, "empty"))
	checkDoneEvent(t, r, "empty", 0, 0)
	mustRun(t, srv, back, nil, "get", target(srv.addr, "empty"), ".")
	sameFile(t, filepath.Join(local, "empty"), filepath.Join(back, "empty"))
}

// A 1 GiB sparse file with a few random regions (at the start, across a
// block boundary, at an odd offset, at the very end) arrives identical.
func TestSparse1GiB(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GiB transfer")
	}
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	const size = 1 << 30
	p := filepath.Join(local, "sparse.img")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for i, off := range []int64{0, 256<<10 - 1000, 333_333_333, 700 << 20, size - 4096} {
		if _, err := f.WriteAt(randomBytes(4096, uint64(100+i)), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--streams", "2", "sparse.img", srv.addr)
	checkCRC(t, checkDoneEvent(t, r, "sparse.img", size, 0), p)
	sameFile(t, p, filepath.Join(root, "sparse.img"))
}

// treeFile is one file of a generated tree.
type treeFile struct {
	rel  string
	data []byte
	perm fs.FileMode
	mod  time.Time
}

// makeTree writes n small files under dir/top, spread over directories,
// with varied sizes, permissions and modification times.
func makeTree(t *testing.T, dir, top string, n int) []treeFile {
	t.Helper()
	perms := []fs.FileMode{0o644, 0o600, 0o640, 0o755, 0o700, 0o444}
	base := time.Date(2021, 3, 4, 5, 6, 7, 0, time.Local)
	var files []treeFile
	for i := range n {
		rel := filepath.Join(top, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("s%d", i%3), fmt.Sprintf("img_%04d.jpg", i))
		tf := treeFile{rel: rel, data: randomBytes(i*7%4096, uint64(i)), perm: perms[i%len(perms)], mod: base.Add(time.Duration(i) * 97 * time.Minute)}
		p := filepath.Join(dir, rel)
		writeFile(t, p, tf.data)
		if err := os.Chmod(p, tf.perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, tf.mod, tf.mod); err != nil {
			t.Fatal(err)
		}
		files = append(files, tf)
	}
	return files
}

// checkTree asserts every file of files is under dir with its contents,
// permissions and modification time (to the second, Kermit's resolution),
// and that nothing else (no stray temporary) is there.
func checkTree(t *testing.T, dir string, files []treeFile) {
	t.Helper()
	want := map[string]treeFile{}
	for _, f := range files {
		want[f.rel] = f
	}
	seen := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f, ok := want[rel]
		if !ok {
			t.Errorf("unexpected file %s", rel)
			return nil
		}
		seen++
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if string(got) != string(f.data) {
			t.Errorf("%s: contents differ (%d bytes, want %d)", rel, len(got), len(f.data))
		}
		fi, _ := d.Info()
		if fi.Mode().Perm() != f.perm {
			t.Errorf("%s: mode %v, want %v", rel, fi.Mode().Perm(), f.perm)
		}
		if !fi.ModTime().Truncate(time.Second).Equal(f.mod.Truncate(time.Second)) {
			t.Errorf("%s: mtime %v, want %v", rel, fi.ModTime(), f.mod)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(files) {
		t.Errorf("found %d of %d files", seen, len(files))
	}
}

// scp semantics: `send -r photos host/backup` creates backup/photos/...;
// `get -r host/backup/photos .` creates ./photos/...
func TestRecursiveTree2000(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	files := makeTree(t, local, "photos", 2000)

	r := mustRun(t, srv, local, []string{"--json"}, "send", "-r", "photos", target(srv.addr, "backup"))
	if n := len(eventsNamed(parseEvents(t, r.stdout), "file_done")); n != 2000 {
		t.Errorf("%d file_done events, want 2000", n)
	}
	checkTree(t, filepath.Join(root, "backup"), files)

	mustRun(t, srv, back, nil, "get", "-r", "--streams", "3", target(srv.addr, "backup/photos"), ".")
	checkTree(t, back, files)
}

// Names with spaces and UTF-8 go both ways and list correctly.
func TestNamesWithSpacesAndUTF8(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	names := []string{"my file.txt", "two  spaces", "  ", "ünïcödé 日本語.bin", "ελληνικά", " leading space", "{braces}.txt", "a}b", "c{d e"}
	var args []string
	for i, n := range names {
		writeFile(t, filepath.Join(local, n), randomBytes(1000+i, uint64(i)))
		args = append(args, n)
	}
	mustRun(t, srv, local, nil, "send", append(args, target(srv.addr, "dir with space"))...)
	for _, n := range names {
		sameFile(t, filepath.Join(local, n), filepath.Join(root, "dir with space", n))
	}
	ls := mustRun(t, srv, local, nil, "ls", target(srv.addr, "dir with space"))
	listing := ls.stdout
	for _, n := range names {
		shown := n
		if strings.HasPrefix(n, " ") || strings.HasSuffix(n, " ") {
			shown = strconv.Quote(n) // a space at either end shows so
		}
		if !strings.Contains(listing, " "+shown+"\n") {
			t.Errorf("ls does not show %q:\n%s", shown, ls.stdout)
		}
	}
	for _, n := range names {
		mustRun(t, srv, back, nil, "get", target(srv.addr, "dir with space/"+n), ".")
		sameFile(t, filepath.Join(local, n), filepath.Join(back, n))
	}
}

// mkdir, ls, mv and rm act on the served tree.
func TestRemoteCommands(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	mustRun(t, srv, local, nil, "mkdir", target(srv.addr, "a/b/c"))
	if fi, err := os.Stat(filepath.Join(root, "a/b/c")); err != nil || !fi.IsDir() {
		t.Fatalf("mkdir a/b/c: %v", err)
	}
	writeFile(t, filepath.Join(local, "f.txt"), []byte("hello\n"))
	mustRun(t, srv, local, nil, "send", "f.txt", target(srv.addr, "a/b"))
	ls := mustRun(t, srv, local, nil, "ls", target(srv.addr, "a/b"))
	listing := ls.stdout
	if !strings.Contains(listing, " c/\n") || !strings.Contains(listing, " 6 ") || !strings.Contains(listing, " f.txt\n") {
		t.Errorf("ls a/b:\n%q", ls.stdout)
	}
	mustRun(t, srv, local, nil, "mv", target(srv.addr, "a/b/f.txt"), target(srv.addr, "a/g.txt"))
	noFile(t, filepath.Join(root, "a/b/f.txt"))
	sameFile(t, filepath.Join(local, "f.txt"), filepath.Join(root, "a/g.txt"))
	mustRun(t, srv, local, nil, "rm", target(srv.addr, "a/g.txt"))
	noFile(t, filepath.Join(root, "a/g.txt"))

	// Failures name what failed, exit 4, and change nothing.
	r := run(t, srv, local, nil, "rm", target(srv.addr, "a/nonexistent"))
	if r.code != 4 || !strings.Contains(r.stderr, "nonexistent") {
		t.Errorf("rm of a missing file: want exit 4 naming it, got %s", r)
	}
	r = run(t, srv, local, nil, "rm", target(srv.addr, "a/b"))
	if r.code != 4 || !strings.Contains(r.stderr, "directory") {
		t.Errorf("rm of a directory: want exit 4 saying it is a directory, got %s", r)
	}
	if _, err := os.Stat(filepath.Join(root, "a/b/c")); err != nil {
		t.Errorf("a failed rm removed something: %v", err)
	}
	r = run(t, srv, local, nil, "mkdir", target(srv.addr, "../escape"))
	if r.code != 4 || !strings.Contains(r.stderr, "unsafe") {
		t.Errorf("mkdir ../escape: want exit 4 refusing an unsafe name, got %s", r)
	}
	noFile(t, filepath.Join(filepath.Dir(root), "escape"))
}

// Exit codes: 2 usage, 3 connection refused, 4 transfer failure (the
// local destination's too).
func TestExitCodes(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "f"), []byte("x"))

	for _, args := range [][]string{{"send"}, {"send", "f"}, {"get", srv.addr}} {
		r := run(t, srv, local, nil, args[0], args[1:]...)
		if r.code != 2 || !strings.Contains(r.stderr, "kerf:") {
			t.Errorf("kerf %v: want exit 2 with a message, got %s", args, r)
		}
	}
	// A missing source is no usage error (the command line was right),
	// as a missing file of a get is not: exit 4, naming it.
	if r := run(t, srv, local, nil, "send", "missing-file", srv.addr); r.code != 4 || !strings.Contains(r.stderr, "missing-file") {
		t.Errorf("send of a missing file: want exit 4 naming it, got %s", r)
	}

	refused := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	r := run(t, srv, local, []string{"--json"}, "send", "f", refused)
	if r.code != 3 || !strings.Contains(r.stderr, "connection refused") {
		t.Errorf("send to a closed port: want exit 3 and 'connection refused', got %s", r)
	}
	r = run(t, srv, local, nil, "get", target(refused, "f"), ".")
	if r.code != 3 || !strings.Contains(r.stderr, "connection refused") {
		t.Errorf("get from a closed port: want exit 3 and 'connection refused', got %s", r)
	}
	// The port given is the port tried: no hint of the default one (QA:
	// "kerf's is 1649 unless HOST:PORT says otherwise" to a PORT given).
	if !strings.Contains(r.stderr, "on that port?") || strings.Contains(r.stderr, "1649") {
		t.Errorf("get from a closed port given: want it asked whether kerf serve runs on that port, and no default port:\n%s", r)
	}

	r = run(t, srv, local, []string{"--json"}, "get", target(srv.addr, "no-such-file"), ".")
	if r.code != 4 || !strings.Contains(r.stderr, "no-such-file") {
		t.Errorf("get of a missing file: want exit 4 naming it, got %s", r)
	}
	evs := parseEvents(t, r.stdout)
	if len(evs) == 0 || evs[len(evs)-1].Event != "error" || evs[len(evs)-1].Error == "" || len(eventsNamed(evs, "error")) != 1 {
		t.Errorf("--json of a failed get should end with one error event:\n%s", r.stdout)
	}
	noFile(t, filepath.Join(local, "no-such-file"))
	// Nor any directory it made for the file, however deep.
	for _, dest := range []string{"q/r/s.txt", "q2/r/"} {
		if r := run(t, srv, local, nil, "get", target(srv.addr, "no-such-file"), dest); r.code != 4 {
			t.Errorf("get of a missing file into %s: want exit 4, got %s", dest, r)
		}
	}
	noFile(t, filepath.Join(local, "q"))
	noFile(t, filepath.Join(local, "q2"))

	// A destination that cannot be made (a file in the way) is not a
	// usage error: the command was right.
	r = run(t, srv, local, nil, "get", target(srv.addr, "x"), "f/sub")
	if r.code != 4 || !strings.Contains(r.stderr, "destination f/sub") {
		t.Errorf("get into a destination under a file: want exit 4 naming it, got %s", r)
	}
}

// A listing too long for one packet comes back as an X (text)
// transaction, in Kermit's canonical CRLF form; `kerf ls` must print it
// with local line ends, like a short listing that fits an ACK. Bug: the
// receiving engine (kermit/recv.go recvGroup, case 'X') keeps
// cur.text = cfg.Text, false in binary mode, so the CRs reach the
// output (escaped by the CLI as \x0d).
func TestLsPrintsLocalLineEnds(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	for _, n := range []int{3, 400} { // one ACK; an X transaction (> 9024 bytes)
		dir := filepath.Join(root, fmt.Sprintf("d%d", n))
		for i := range n {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("f%04d", i)), []byte("x"))
		}
		ls := mustRun(t, srv, local, nil, "ls", target(srv.addr, fmt.Sprintf("d%d", n)))
		lines := strings.Split(strings.TrimSuffix(ls.stdout, "\n"), "\n")
		if len(lines) != n {
			t.Fatalf("ls of %d files printed %d lines", n, len(lines))
		}
		bad := 0
		for i, l := range lines {
			if !strings.HasSuffix(l, fmt.Sprintf(" f%04d", i)) {
				if bad++; bad <= 3 {
					t.Errorf("ls of %d files: line %q does not end with the name f%04d", n, l, i)
				}
			}
		}
	}
}

// A file the server refuses (a directory is in the way) must not be
// reported as sent, and the command must fail (exit 4) naming it, while
// the other files of the group arrive. (Regression: kerf exited 0, and in
// dual-channel mode also reported the refused file file_done.)
func TestRefusedFileFailsTransfer(t *testing.T) {
	for _, mode := range []string{"dual", "classic"} {
		t.Run(mode, func(t *testing.T) {
			root, local := t.TempDir(), t.TempDir()
			srv := startServer(t, root, serverOpts{classic: mode == "classic"})
			if err := os.MkdirAll(filepath.Join(root, "a.bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(local, "a.bin"), []byte("refused"))
			writeFile(t, filepath.Join(local, "b.bin"), []byte("accepted"))
			args := []string{"a.bin", "b.bin", srv.addr}
			if mode == "classic" {
				args = append([]string{"--classic"}, args...)
			}
			r := run(t, srv, local, []string{"--json"}, "send", args...)
			sameFile(t, filepath.Join(local, "b.bin"), filepath.Join(root, "b.bin"))
			if fi, err := os.Stat(filepath.Join(root, "a.bin")); err != nil || !fi.IsDir() {
				t.Errorf("the directory in the way was disturbed: %v", err)
			}
			evs := parseEvents(t, r.stdout)
			for _, e := range eventsNamed(evs, "file_done") {
				if e.Name == "a.bin" {
					t.Errorf("the refused file was reported sent: %+v", e)
				}
			}
			errs := eventsNamed(evs, "file_error")
			if len(errs) != 1 || errs[0].Name != "a.bin" || !strings.Contains(errs[0].Error, "refused") {
				t.Errorf("want one file_error for a.bin saying it was refused:\n%s", r.stdout)
			}
			if r.code != 4 || !strings.Contains(r.stderr, "a.bin") {
				t.Errorf("want exit 4 naming a.bin, got %s", r)
			}
			// Only what arrived counts, whatever crossed the link.
			if last := evs[len(evs)-1]; last.Event != "error" || last.Bytes != int64(len("accepted")) {
				t.Errorf("the last event: want an error with bytes %d, those of b.bin alone:\n%s", len("accepted"), r.stdout)
			}
		})
	}
}

// With the data channel both sides report progress during a file, as
// classic mode does per D packet. (Regression: no progress event came
// before each file's end, so the progress bar stood still.)
func TestProgressEventsWithDataChannel(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	const size = 8 << 20 // 32 blocks
	writeFile(t, filepath.Join(local, "p.bin"), randomBytes(size, 51))
	for _, c := range []struct {
		name string
		dir  string
		args []string
	}{
		{"send", local, []string{"send", "p.bin", srv.addr}},
		{"get", back, []string{"get", target(srv.addr, "p.bin"), "."}},
	} {
		r := mustRun(t, srv, c.dir, []string{"--json"}, c.args[0], c.args[1:]...)
		prog := eventsNamed(parseEvents(t, r.stdout), "progress")
		if len(prog) == 0 {
			t.Errorf("%s of %d bytes over the data channel: no progress event", c.name, size)
		}
		for _, e := range prog {
			if e.Bytes <= 0 || e.Bytes > size {
				t.Errorf("%s: bad progress event %+v", c.name, e)
			}
		}
	}
}

// Remote paths longer than one short Kermit packet and than a generic
// argument's 94 bytes. (Regression: every command naming one failed with
// "kermit: field of N bytes does not fit one packet".)
func TestLongRemotePaths(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	deep := strings.Repeat("d", 60) + "/" + strings.Repeat("e", 60) + "/" + strings.Repeat("f", 30)
	writeFile(t, filepath.Join(local, "n.txt"), []byte("deep\n"))
	r := run(t, srv, local, nil, "send", "n.txt", target(srv.addr, deep+"/"))
	if r.code != 0 {
		t.Fatalf("send into a %d-byte remote directory: %s", len(deep), r)
	}
	sameFile(t, filepath.Join(local, "n.txt"), filepath.Join(root, deep, "n.txt"))
	r = run(t, srv, back, nil, "get", target(srv.addr, deep+"/n.txt"), ".")
	if r.code != 0 {
		t.Fatalf("get of a %d-byte remote path: %s", len(deep)+6, r)
	}
	sameFile(t, filepath.Join(local, "n.txt"), filepath.Join(back, "n.txt"))
}

// Several remote names and a wildcard in one get.
func TestGetSeveralAndWildcard(t *testing.T) {
	root, back1, back2 := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	for i, n := range []string{"a.txt", "b.txt", "c.bin", "sub/d.txt"} {
		writeFile(t, filepath.Join(root, n), randomBytes(1000*(i+1), uint64(200+i)))
	}
	mustRun(t, srv, back1, nil, "get", target(srv.addr, "a.txt"), target(srv.addr, "c.bin"), target(srv.addr, "sub/d.txt"), ".")
	for _, n := range []string{"a.txt", "c.bin"} {
		sameFile(t, filepath.Join(root, n), filepath.Join(back1, n))
	}
	sameFile(t, filepath.Join(root, "sub/d.txt"), filepath.Join(back1, "d.txt"))
	noFile(t, filepath.Join(back1, "b.txt"))

	mustRun(t, srv, back2, nil, "get", target(srv.addr, "*.txt"), ".")
	for _, n := range []string{"a.txt", "b.txt"} {
		sameFile(t, filepath.Join(root, n), filepath.Join(back2, n))
	}
	noFile(t, filepath.Join(back2, "c.bin"))
	noFile(t, filepath.Join(back2, "d.txt"))
}

// send -r follows links to files, as scp -r does, and says what it
// passes over (a link to a directory, a FIFO) instead of dropping it
// silently; a dangling link is a file not sent (exit 4), as a server's
// GET -r reports one; a directory holding only a FIFO is made. A get -r
// of such a tree says what it passes over too.
func TestRecursiveSendSymlinksAndSpecialFiles(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "tree/a.txt"), []byte("a"))
	writeFile(t, filepath.Join(local, "outside.txt"), []byte("outside"))
	writeFile(t, filepath.Join(local, "otherdir/x.txt"), []byte("x"))
	for link, to := range map[string]string{"link.txt": "../outside.txt", "dirlink": "../otherdir", "dangling": "../nowhere"} {
		if err := os.Symlink(to, filepath.Join(local, "tree", link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(local, "tree/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(local, "tree/fifodir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(local, "tree/fifodir/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("fifo", filepath.Join(local, "tree/fifolink")); err != nil {
		t.Fatal(err)
	}
	// A leftover partial of an interrupted get: passed over, as a
	// server passes it over, not sent to be refused (exit 4).
	writeFile(t, filepath.Join(local, "tree/.old.kerf-part"), []byte("partial"))
	r := run(t, srv, local, nil, "send", "-r", "tree", srv.addr)
	if r.code != 4 || !strings.Contains(r.stderr, "not transferred: tree/dangling\n") {
		t.Errorf("want exit 4 naming only tree/dangling as not sent:\n%s", r)
	}
	if fi, err := os.Stat(filepath.Join(root, "tree/fifodir")); err != nil || !fi.IsDir() {
		t.Errorf("the directory holding only a FIFO was not made: %v", err)
	}
	sameFile(t, filepath.Join(local, "tree/a.txt"), filepath.Join(root, "tree/a.txt"))
	sameFile(t, filepath.Join(local, "outside.txt"), filepath.Join(root, "tree/link.txt"))
	if fi, err := os.Lstat(filepath.Join(root, "tree/link.txt")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the link arrived as %v, %v; want a regular file", fi, err)
	}
	for _, n := range []string{"dirlink", "dangling", "fifo", "fifolink", ".old.kerf-part"} {
		noFile(t, filepath.Join(root, "tree", n))
		if !strings.Contains(r.stderr, filepath.Join("tree", n)) {
			t.Errorf("kerf did not say it skipped tree/%s:\n%s", n, r.stderr)
		}
	}
	if !strings.Contains(r.stderr, "a symbolic link to a named pipe") {
		t.Errorf("a link to a FIFO not said to be one:\n%s", r.stderr)
	}

	// The same kinds on the server: a get -r says what it passed over
	// (a file_skipped each), as the send does, and is no failure.
	os.Symlink("fifodir", filepath.Join(root, "tree/dirlink"))
	syscall.Mkfifo(filepath.Join(root, "tree/fifo"), 0o644)
	syscall.Mkfifo(filepath.Join(root, "tree/fifodir/fifo"), 0o644)
	os.Symlink("fifo", filepath.Join(root, "tree/fifolink"))
	back := t.TempDir()
	r = mustRun(t, srv, back, []string{"--json"}, "get", "-r", target(srv.addr, "tree"), ".")
	skipped := map[string]string{}
	for _, e := range eventsNamed(parseEvents(t, r.stdout), "file_skipped") {
		skipped[e.Name] = e.Reason
	}
	for n, what := range map[string]string{"tree/dirlink": "a link to a directory", "tree/fifo": "a named pipe", "tree/fifodir/fifo": "a named pipe", "tree/fifolink": "a link to a named pipe"} {
		if !strings.Contains(skipped[n], what) {
			t.Errorf("get -r: %s skipped for %q, want %q:\n%s", n, skipped[n], what, r.stdout)
		}
		noFile(t, filepath.Join(back, n))
	}
	sameFile(t, filepath.Join(local, "tree/a.txt"), filepath.Join(back, "tree/a.txt"))
}

// Symbolic-link loops in a server's tree are named as not sent
// (file_error, exit 4) by get -r and by a wildcard, as dangling links
// are, and the rest of the tree comes (QA: passed over without a word,
// exit 0, taken for links to partials).
func TestGetNamesLinkLoops(t *testing.T) {
	root := t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "tree/real.txt"), []byte("real"))
	for link, to := range map[string]string{"loop1": "loop2", "loop2": "loop1", "self": "self"} {
		if err := os.Symlink(to, filepath.Join(root, "tree", link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ spec, prefix string }{{"tree", "tree/"}, {"tree/*", ""}} {
		local := t.TempDir()
		args := []string{target(srv.addr, c.spec), "."}
		if c.prefix != "" {
			args = append([]string{"-r"}, args...)
		}
		r := run(t, srv, local, []string{"--json"}, "get", args...)
		failed := map[string]string{}
		for _, e := range eventsNamed(parseEvents(t, r.stdout), "file_error") {
			failed[e.Name] = e.Error
		}
		for _, n := range []string{"loop1", "loop2", "self"} {
			if !strings.Contains(failed[c.prefix+n], "too many levels of symbolic links") {
				t.Errorf("get %s: %s%s not named as not sent for its loop (%q):\n%s", c.spec, c.prefix, n, failed[c.prefix+n], r)
			}
		}
		if r.code != 4 {
			t.Errorf("get %s: exit %d, want 4:\n%s", c.spec, r.code, r)
		}
		sameFile(t, filepath.Join(root, "tree/real.txt"), filepath.Join(local, c.prefix+"real.txt"))
	}
}

// A wildcard GET skips a subdirectory instead of failing; a name with
// wildcard characters that exists is fetched alone; names of 245-255
// bytes go both ways (their temporary names would exceed NAME_MAX).
func TestGetWildcardsLiteralsAndLongNames(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	long := strings.Repeat("é", 125) + ".bin" // 254 bytes
	for i, n := range []string{"a.txt", "brk[et", "star*", "stardust", "sub/c.txt"} {
		writeFile(t, filepath.Join(root, "wc", n), randomBytes(1000+i, uint64(300+i)))
	}
	writeFile(t, filepath.Join(local, long), randomBytes(5000, 310))
	mustRun(t, srv, local, nil, "send", long, target(srv.addr, "wc"))
	sameFile(t, filepath.Join(local, long), filepath.Join(root, "wc", long))

	all := t.TempDir()
	mustRun(t, srv, all, nil, "get", target(srv.addr, "wc/*"), ".")
	for _, n := range []string{"a.txt", "brk[et", "star*", "stardust", long} {
		sameFile(t, filepath.Join(root, "wc", n), filepath.Join(all, n))
	}
	noFile(t, filepath.Join(all, "sub"))

	for _, n := range []string{"brk[et", "star*"} {
		one := t.TempDir()
		mustRun(t, srv, one, nil, "get", target(srv.addr, "wc/"+n), ".")
		sameFile(t, filepath.Join(root, "wc", n), filepath.Join(one, n))
		if ents, _ := os.ReadDir(one); len(ents) != 1 {
			t.Errorf("get wc/%s fetched %d files, want 1", n, len(ents))
		}
	}
}

// A send goes on past sources it cannot send: the others arrive, the
// missing one is named, and the exit is a transfer failure (4), as
// scp and rsync carry on. A link to a directory named on the command
// line is followed, and "send -r .." sends the parent's contents.
func TestSendGoesOnPastBadSources(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "a.txt"), []byte("a"))
	writeFile(t, filepath.Join(local, "b.txt"), []byte("b"))
	writeFile(t, filepath.Join(local, "tree/sub/c.txt"), []byte("c"))
	if err := os.Symlink("tree", filepath.Join(local, "treelink")); err != nil {
		t.Fatal(err)
	}
	r := run(t, srv, local, nil, "send", "a.txt", "missing.txt", "b.txt", target(srv.addr, "x"))
	if r.code != 4 || !strings.Contains(r.stderr, "missing.txt") {
		t.Errorf("want exit 4 naming missing.txt:\n%s", r)
	}
	sameFile(t, filepath.Join(local, "a.txt"), filepath.Join(root, "x/a.txt"))
	sameFile(t, filepath.Join(local, "b.txt"), filepath.Join(root, "x/b.txt"))

	mustRun(t, srv, local, nil, "send", "-r", "treelink", target(srv.addr, "y"))
	sameFile(t, filepath.Join(local, "tree/sub/c.txt"), filepath.Join(root, "y/treelink/sub/c.txt"))

	mustRun(t, srv, filepath.Join(local, "tree/sub"), nil, "send", "-r", "..", target(srv.addr, "z"))
	sameFile(t, filepath.Join(local, "tree/sub/c.txt"), filepath.Join(root, "z/sub/c.txt"))
}

// A get of several names fetches those that exist and names the one
// that does not (exit 4), instead of fetching nothing; get -r host/
// fetches the whole tree.
func TestGetGoesOnPastMissingNames(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "a.txt"), []byte("a"))
	writeFile(t, filepath.Join(root, "b.txt"), []byte("b"))
	writeFile(t, filepath.Join(root, "d/c.txt"), []byte("c"))
	r := run(t, srv, local, nil, "get", target(srv.addr, "a.txt"), target(srv.addr, "missing.txt"), target(srv.addr, "d"), target(srv.addr, "b.txt"), ".")
	if r.code != 4 || !strings.Contains(r.stderr, "missing.txt") || !strings.Contains(r.stderr, "d is a directory") {
		t.Errorf("want exit 4 naming missing.txt and the directory d:\n%s", r)
	}
	sameFile(t, filepath.Join(root, "a.txt"), filepath.Join(local, "a.txt"))
	sameFile(t, filepath.Join(root, "b.txt"), filepath.Join(local, "b.txt"))

	// One name alone that is missing is an error of the whole get, and
	// the directory made for it does not stay behind.
	if r := run(t, srv, local, nil, "get", target(srv.addr, "missing.txt"), "newdir"); r.code != 4 || !strings.Contains(r.stderr, "missing.txt") {
		t.Errorf("want exit 4 naming missing.txt:\n%s", r)
	}
	noFile(t, filepath.Join(local, "newdir"))

	all := t.TempDir()
	mustRun(t, srv, all, nil, "get", "-r", srv.addr+"/", ".")
	for _, n := range []string{"a.txt", "b.txt", "d/c.txt"} {
		sameFile(t, filepath.Join(root, n), filepath.Join(all, n))
	}
}
