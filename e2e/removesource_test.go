package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// send --remove-source-files moves a tree: each file goes once the
// kerf server says it is saved, the directories stay, a symbolic link
// stays (its target was what went), and a rerun with --resume removes
// what an interrupted move left behind although it is there whole.
func TestSendRemoveSourceFiles(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	files := map[string][]byte{
		"spool/a.bin":     randomBytes(300000, 1),
		"spool/b.txt":     []byte("b\n"),
		"spool/sub/c.bin": randomBytes(5000, 3),
		"spool/empty":     nil,
	}
	for n, b := range files {
		writeFile(t, filepath.Join(local, n), b)
	}
	if err := os.Symlink("b.txt", filepath.Join(local, "spool/link.txt")); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--remove-source-files", "-r", "spool", srv.addr)
	for n, b := range files {
		if _, err := os.Lstat(filepath.Join(local, n)); !os.IsNotExist(err) {
			t.Errorf("%s still here after it was sent (%v)", n, err)
		}
		got, err := os.ReadFile(filepath.Join(root, n))
		if err != nil || !slices.Equal(got, b) {
			t.Errorf("%s at the server: %d bytes, %v; want its %d", n, len(got), err, len(b))
		}
	}
	if fi, err := os.Lstat(filepath.Join(local, "spool/link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was removed (%v)", err)
	}
	if fi, err := os.Stat(filepath.Join(local, "spool/sub")); err != nil || !fi.IsDir() {
		t.Errorf("a directory was removed (%v)", err)
	}
	evs := parseEvents(t, r.stdout)
	if n := len(eventsNamed(evs, "source_removed")); n != len(files) {
		t.Errorf("%d source_removed events, want %d:\n%s", n, len(files), r.stdout)
	}
	if k := eventsNamed(evs, "source_kept"); len(k) != 1 || k[0].Path != "spool/link.txt" {
		t.Errorf("source_kept events %+v, want the link's alone", k)
	}

	// Sent before, not removed then (an interrupted move): a --resume
	// finds it there whole. The server being on this machine, what it
	// has may be this very file (QA: a file in the server's own tree was
	// removed, the only copy): it stays, said so. (Removed when the
	// server is elsewhere: TestSourceRemover.)
	writeFile(t, filepath.Join(local, "again.bin"), randomBytes(70000, 9))
	mustRun(t, srv, local, nil, "send", "again.bin", srv.addr)
	r = mustRun(t, srv, local, []string{"--json"}, "send", "--resume", "--remove-source-files", "again.bin", srv.addr)
	if _, err := os.Stat(filepath.Join(local, "again.bin")); err != nil {
		t.Errorf("a file found there whole, by a server on this machine, was removed (%v)", err)
	}
	if k := eventsNamed(parseEvents(t, r.stdout), "source_kept"); len(k) != 1 || !strings.Contains(k[0].Reason, "on this machine") {
		t.Errorf("source_kept events %+v, want one saying the server is on this machine", k)
	}
	sameContent(t, filepath.Join(root, "again.bin"), randomBytes(70000, 9))
	// The very file: the server's own, sent to itself, is refused
	// before anything moves (the directory probe, ontoitself.go), with
	// or without --resume.
	for _, flags := range [][]string{{"--resume"}, nil} {
		args := append(flags, "--remove-source-files", filepath.Join(root, "again.bin"), srv.addr)
		r = run(t, srv, local, nil, "send", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "is the server's directory itself") {
			t.Errorf("a move of the server's own file onto itself: %s\nwant exit 2 naming the shared directory", r)
		}
		sameContent(t, filepath.Join(root, "again.bin"), randomBytes(70000, 9))
	}
	noProbesLeft(t, root)
	// Under another name in that directory it is a rename, and goes.
	mustRun(t, srv, local, nil, "send", "--remove-source-files", filepath.Join(root, "again.bin"), target(srv.addr, "renamed.bin"))
	sameContent(t, filepath.Join(root, "renamed.bin"), randomBytes(70000, 9))
	if _, err := os.Stat(filepath.Join(root, "again.bin")); !os.IsNotExist(err) {
		t.Errorf("moved to another name in its own directory, the file is still there (%v)", err)
	}

	// One there whole under the same name but different from this one
	// (another size) is sent, not taken for it; and then removed.
	writeFile(t, filepath.Join(local, "again.bin"), randomBytes(1000, 10))
	mustRun(t, srv, local, nil, "send", "--resume", "--remove-source-files", "again.bin", srv.addr)
	if _, err := os.Stat(filepath.Join(local, "again.bin")); !os.IsNotExist(err) {
		t.Errorf("not removed after it was sent (%v)", err)
	}
	sameContent(t, filepath.Join(root, "again.bin"), randomBytes(1000, 10))
}

// To a classic Kermit (C-Kermit's server), whose ACK of the file's Z is
// all it says: the file goes then, as with C-Kermit's SEND /DELETE.
func TestSendRemoveSourceFilesToCKermit(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "up.bin"), randomBytes(120000, 23))
	_, addr := ckermitServer(t, ckdir)
	r := run(t, nil, local, []string{"--json"}, "send", "--classic", "--remove-source-files", "up.bin", addr)
	if r.code != 0 {
		t.Fatalf("kerf send --classic --remove-source-files to C-Kermit: %s", r)
	}
	sameContent(t, filepath.Join(ckdir, "up.bin"), randomBytes(120000, 23))
	if _, err := os.Stat(filepath.Join(local, "up.bin")); !os.IsNotExist(err) {
		t.Errorf("up.bin still here (%v)", err)
	}
	// From C-Kermit's own directory: its REMOTE DIRECTORY lists the
	// probe's file, and the move is refused. (A server of its own: one
	// takes one session.)
	_, addr = ckermitServer(t, ckdir)
	r = run(t, nil, local, nil, "send", "--classic", "--remove-source-files", filepath.Join(ckdir, "up.bin"), addr)
	if r.code != 2 || !strings.Contains(r.stderr, "is the server's directory itself") {
		t.Errorf("a move of C-Kermit's own file onto itself: %s\nwant exit 2 naming the shared directory", r)
	}
	sameContent(t, filepath.Join(ckdir, "up.bin"), randomBytes(120000, 23))
	noProbesLeft(t, ckdir)
}

// noProbesLeft fails if the directory probe of --remove-source-files
// left one of its files in dir.
func noProbesLeft(t *testing.T, dir string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(dir, ".kerf-probe-*"))
	if len(left) > 0 {
		t.Errorf("probe files left behind: %q", left)
	}
}

func sameContent(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("%s: %d bytes, %v; want %d", path, len(got), err, len(want))
	}
}

// get --remove-source-files: the kerf server removes each file once
// this side has it saved; a link stays (its target was what came), and
// the directories stay. A --resume run again removes what an interrupted
// move left on the server, which is here whole, without sending it.
func TestGetRemoveSourceFiles(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	files := map[string][]byte{
		"out/a.bin":     randomBytes(400000, 11),
		"out/b.txt":     []byte("b\n"),
		"out/sub/c.bin": randomBytes(3000, 13),
		"out/empty":     nil,
	}
	for n, b := range files {
		writeFile(t, filepath.Join(root, n), b)
	}
	if err := os.Symlink("b.txt", filepath.Join(root, "out/link.txt")); err != nil {
		t.Fatal(err)
	}
	for _, sessions := range []string{"1", "4"} {
		t.Run("sessions="+sessions, func(t *testing.T) {
			dst := t.TempDir()
			for n, b := range files {
				writeFile(t, filepath.Join(root, n), b)
			}
			r := mustRun(t, srv, dst, nil, "get", "--sessions", sessions, "--remove-source-files", "-r", target(srv.addr, "out"), ".")
			// The link leads to b.txt, which this get moves: sent before
			// or while b.txt goes, it comes as a copy; met after, it is
			// passed over, saying why. Either way the get succeeds (it
			// failed now and then with four sessions: "removed ... while
			// it was being sent").
			if got, err := os.ReadFile(filepath.Join(dst, "out/link.txt")); err != nil {
				if !strings.Contains(r.stderr, "its file was moved already (sent as out/b.txt") {
					t.Errorf("out/link.txt neither came (%v) nor was said to be passed over:\n%s", err, r.stderr)
				}
			} else if string(got) != "b\n" {
				t.Errorf("out/link.txt came as %q, want b.txt's bytes", got)
			}
			for n, b := range files {
				sameContent(t, filepath.Join(dst, n), b)
				if _, err := os.Lstat(filepath.Join(root, n)); !os.IsNotExist(err) {
					t.Errorf("%s still at the server (%v)", n, err)
				}
			}
			if fi, err := os.Lstat(filepath.Join(root, "out/link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the server's link was removed (%v)", err)
			}
			if fi, err := os.Stat(filepath.Join(root, "out/sub")); err != nil || !fi.IsDir() {
				t.Errorf("the server's directory was removed (%v)", err)
			}
		})
	}

	// Fetched before and not removed then: a --resume finds it here
	// whole, sending nothing. The client being on the server's machine,
	// what it has may be the server's very file (QA: a get into the
	// server's own directory removed the only copy): it stays. (Removed
	// for a client elsewhere: TestSentRemovalKeepsForLocalClient.)
	writeFile(t, filepath.Join(root, "again.bin"), randomBytes(90000, 17))
	mustRun(t, srv, local, nil, "get", target(srv.addr, "again.bin"), ".")
	r := mustRun(t, srv, local, []string{"--json"}, "get", "--resume", "--remove-source-files", target(srv.addr, "again.bin"), ".")
	if _, err := os.Stat(filepath.Join(root, "again.bin")); err != nil {
		t.Errorf("a file found whole by a client on this machine was removed at the server (%v)", err)
	}
	// And the client is told so, not only the server's log (QA ar: a
	// move that moved nothing ended silent, exit 0).
	if k := eventsNamed(parseEvents(t, r.stdout), "source_kept"); len(k) != 1 || k[0].Name != "again.bin" || !strings.Contains(k[0].Reason, "on the server's machine") {
		t.Errorf("source_kept events %+v, want again.bin's, saying why the server kept it", k)
	}
	// Into the server's own directory: refused before anything moves
	// (the directory probe, ontoitself.go).
	r2 := run(t, srv, local, nil, "get", "--resume", "--remove-source-files", target(srv.addr, "again.bin"), root)
	if r2.code != 2 || !strings.Contains(r2.stderr, "is the server's directory itself") {
		t.Errorf("a get of the server's file into its own directory: %s\nwant exit 2 naming the shared directory", r2)
	}
	sameContent(t, filepath.Join(root, "again.bin"), randomBytes(90000, 17))
	noProbesLeft(t, root)
	if d := eventsNamed(parseEvents(t, r.stdout), "file_done"); len(d) != 0 {
		t.Errorf("a file here whole was fetched again: %+v", d)
	}
	sameContent(t, filepath.Join(local, "again.bin"), randomBytes(90000, 17))
}

// A user who may not delete (read-only) is told so before anything is
// fetched, and the server's files stay.
func TestGetRemoveSourceFilesReadOnly(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	if srv.state == "" {
		t.Fatal("the server has no state directory to add a user to")
	}
	add := exec.Command(kerfBin, "user", "add", "--read-only", "--root", root, "--password-stdin", "--state", srv.state, "reader")
	add.Stdin = strings.NewReader("ReaderPassword12345\n")
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("kerf user add: %v\n%s", err, out)
	}
	pw := filepath.Join(t.TempDir(), "pw")
	writeFile(t, pw, []byte("ReaderPassword12345\n"))
	writeFile(t, filepath.Join(root, "keep.bin"), randomBytes(5000, 19))
	r := run(t, srv, local, nil, "get", "--user", "reader", "--password-file", pw, "--remove-source-files", target(srv.addr, "keep.bin"), ".")
	if r.code == 0 || !strings.Contains(r.stderr, "remove") {
		t.Errorf("a read-only user's get --remove-source-files: %s; want it refused, saying why", r)
	}
	if _, err := os.Stat(filepath.Join(root, "keep.bin")); err != nil {
		t.Errorf("the server's file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(local, "keep.bin")); !os.IsNotExist(err) {
		t.Errorf("fetched although the move was refused (%v)", err)
	}
}

// A classic Kermit server is not asked to remove anything: the get is
// refused before it begins, and its files stay.
func TestGetRemoveSourceFilesFromCKermit(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ckdir, "down.bin"), randomBytes(20000, 29))
	_, addr := ckermitServer(t, ckdir)
	r := run(t, nil, local, nil, "get", "--classic", "--remove-source-files", target(addr, "down.bin"), ".")
	if r.code == 0 || !strings.Contains(r.stderr, "remove") {
		t.Errorf("get --remove-source-files from C-Kermit: %s; want it refused, saying why", r)
	}
	if _, err := os.Stat(filepath.Join(ckdir, "down.bin")); err != nil {
		t.Errorf("C-Kermit's file: %v", err)
	}
}

// Hard links of one file are each removed once sent, send and get: the
// removal of the first moves the others' change time, and only their
// link count changed (QA r: the second was kept, "changed since it was
// sent", exit 0).
func TestRemoveSourceFilesHardLinks(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	data := randomBytes(50_000, 31)
	link := func(dir string) {
		t.Helper()
		writeFile(t, filepath.Join(dir, "hl/a"), data)
		for _, n := range []string{"hl/b", "hl/sub/c"} {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755)
			if err := os.Link(filepath.Join(dir, "hl/a"), filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	names := []string{"hl/a", "hl/b", "hl/sub/c"}
	link(local)
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--remove-source-files", "-r", "hl", srv.addr)
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(local, n)); !os.IsNotExist(err) {
			t.Errorf("send: %s still here (%v)", n, err)
		}
		sameContent(t, filepath.Join(root, n), data)
	}
	if k := eventsNamed(parseEvents(t, r.stdout), "source_kept"); len(k) != 0 {
		t.Errorf("send: source_kept %+v, want none", k)
	}

	os.RemoveAll(filepath.Join(root, "hl"))
	link(root)
	dst := t.TempDir()
	mustRun(t, srv, dst, nil, "get", "--remove-source-files", "-r", target(srv.addr, "hl"), ".")
	for _, n := range names {
		sameContent(t, filepath.Join(dst, n), data)
		if _, err := os.Lstat(filepath.Join(root, n)); !os.IsNotExist(err) {
			t.Errorf("get: %s still at the server (%v)", n, err)
		}
	}
}

// What one user's move removed explains only that user's links: another
// user's get of a link to the moved file fails as a link to nothing, as
// it did before moves were remembered (QA ab: passed over, naming the
// other user's file).
func TestMovedFileIsNoOtherUsersAffair(t *testing.T) {
	root, local, other := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	add := exec.Command(kerfBin, "user", "add", "--root", root, "--password-stdin", "--state", srv.state, "second")
	add.Stdin = strings.NewReader("SecondPassword12345\n")
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("kerf user add: %v\n%s", err, out)
	}
	pw := filepath.Join(t.TempDir(), "pw")
	writeFile(t, pw, []byte("SecondPassword12345\n"))
	writeFile(t, filepath.Join(root, "out/b.txt"), []byte("b\n"))
	os.MkdirAll(filepath.Join(root, "links"), 0o755)
	if err := os.Symlink("../out/b.txt", filepath.Join(root, "links/to-b.txt")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, srv, local, nil, "get", "--remove-source-files", "-r", target(srv.addr, "out"), ".")
	if _, err := os.Lstat(filepath.Join(root, "out/b.txt")); !os.IsNotExist(err) {
		t.Fatalf("out/b.txt not moved (%v)", err)
	}
	r := run(t, srv, other, nil, "get", "--user", "second", "--password-file", pw, "-r", target(srv.addr, "links"), ".")
	if r.code == 0 || strings.Contains(r.stderr, "moved already") {
		t.Errorf("another user's get of a link to the moved file: %s\nwant it failed, not passed over with the first user's move", r)
	}
	// The mover's own: its file went with the move.
	r = run(t, srv, t.TempDir(), nil, "get", "-r", target(srv.addr, "links"), ".")
	if r.code != 0 || !strings.Contains(r.stderr, "its file was moved already (sent as out/b.txt") {
		t.Errorf("the mover's get of a link to the moved file: %s\nwant it passed over, saying why", r)
	}
}
