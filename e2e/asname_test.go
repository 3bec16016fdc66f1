package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// One file copied to a name that is not a directory takes that name, as
// with cp, scp and rsync; to a directory, or a name ending in "/", it
// keeps its own. (Every destination was taken for a directory, and made:
// `send a.txt host/b.txt` made a directory b.txt.)
func TestOneFileTakesTheDestinationName(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "a.txt"), randomBytes(3000, 11))
	writeFile(t, filepath.Join(root, "old.txt"), []byte("to be replaced"))
	if err := os.MkdirAll(filepath.Join(root, "isdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(local, "a.txt")
	for _, c := range []struct{ remote, stored string }{
		{"new.txt", "new.txt"},
		{"deep/er/x.txt", "deep/er/x.txt"},
		{"isdir", "isdir/a.txt"},
		{"made/", "made/a.txt"},
		{"old.txt", "old.txt"},
	} {
		if r := run(t, srv, local, nil, "send", "a.txt", target(srv.addr, c.remote)); r.code != 0 {
			t.Fatalf("send a.txt to %s: %s", c.remote, r)
		}
		sameFile(t, src, filepath.Join(root, c.stored))
	}

	// With -r, or from a tree, always a directory: "send -r ." of a
	// directory holding one file (the tree's top is not sent).
	writeFile(t, filepath.Join(local, "solo", "only.txt"), []byte("only"))
	if r := run(t, srv, filepath.Join(local, "solo"), nil, "send", "-r", ".", target(srv.addr, "backup")); r.code != 0 {
		t.Fatalf("send -r . to backup: %s", r)
	}
	sameFile(t, filepath.Join(local, "solo", "only.txt"), filepath.Join(root, "backup", "only.txt"))
	if r := run(t, srv, local, nil, "send", "-r", "a.txt", target(srv.addr, "rnew")); r.code != 0 {
		t.Fatalf("send -r a.txt to rnew: %s", r)
	}
	sameFile(t, src, filepath.Join(root, "rnew", "a.txt"))
	// A destination the server refuses to enter for another reason
	// than its absence is refused, not taken for a file name.
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if r := run(t, srv, local, nil, "send", "a.txt", target(srv.addr, "out")); r.code != 4 || !strings.Contains(r.stderr, "destination out: ") || !strings.Contains(r.stderr, "leads outside") {
		t.Errorf("send a.txt to a link leading out: want exit 4 saying so of the destination, got %s", r)
	}

	back := t.TempDir()
	writeFile(t, filepath.Join(back, "exists.txt"), []byte("to be replaced"))
	if err := os.Mkdir(filepath.Join(back, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dest, stored string }{
		{"got.txt", "got.txt"},
		{"exists.txt", "exists.txt"},
		{"d", "d/new.txt"},
		{"nd/", "nd/new.txt"},
		{".", "new.txt"},
	} {
		if r := run(t, srv, back, nil, "get", target(srv.addr, "new.txt"), c.dest); r.code != 0 {
			t.Fatalf("get new.txt to %s: %s", c.dest, r)
		}
		sameFile(t, src, filepath.Join(back, c.stored))
	}
	// A wildcard may match several files: always a directory.
	if r := run(t, srv, back, nil, "get", target(srv.addr, "n*.txt"), "pat"); r.code != 0 {
		t.Fatalf("get n*.txt pat: %s", r)
	}
	sameFile(t, src, filepath.Join(back, "pat", "new.txt"))
}

// A get to /dev/null fetches and checks the file and stores nothing, as
// curl -o /dev/null does (QA: refused as "not a regular file", after
// all its data had come), and says it saved none.
func TestGetToDevNull(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "big.bin"), randomBytes(3<<20, 12))
	r := run(t, srv, local, []string{"--json"}, "get", target(srv.addr, "big.bin"), os.DevNull)
	if r.code != 0 {
		t.Fatalf("get big.bin /dev/null: %s", r)
	}
	// Checked, not saved anywhere: no file_saved (QA).
	if evs := parseEvents(t, r.stdout); len(eventsNamed(evs, "file_done")) != 1 || len(eventsNamed(evs, "file_saved")) != 0 {
		t.Errorf("get big.bin /dev/null --json: want file_done and no file_saved:\n%s", r.stdout)
	}
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer the null device: %v %v", os.DevNull, fi, err)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(os.DevNull), "."+filepath.Base(os.DevNull)+".kerf-part")); !os.IsNotExist(err) {
		t.Errorf("a partial was made beside %s: %v", os.DevNull, err)
	}
	// A missing remote file still fails.
	if r := run(t, srv, local, nil, "get", target(srv.addr, "missing.bin"), os.DevNull); r.code == 0 {
		t.Errorf("get of a missing file to /dev/null: %s", r)
	}
	// A tree cannot go there: a usage error, before connecting (it was
	// exit 4, after).
	if r := run(t, srv, local, nil, "get", "-r", target(srv.addr, "/"), os.DevNull); r.code != 2 {
		t.Errorf("get -r to /dev/null: %s; want exit 2", r)
	}
	// A move to it, or to a link to it, would leave the file nowhere:
	// refused, and the server's copy stays (QA u: removed, exit 0).
	link := filepath.Join(local, "null")
	if err := os.Symlink(os.DevNull, link); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{os.DevNull, link} {
		if r := run(t, srv, local, nil, "get", "--remove-source-files", target(srv.addr, "big.bin"), dst); r.code != 2 || !strings.Contains(r.stderr, "keeps nothing") {
			t.Errorf("get --remove-source-files to %s: %s; want exit 2", dst, r)
		}
		if _, err := os.Stat(filepath.Join(root, "big.bin")); err != nil {
			t.Fatalf("the server's big.bin after a move to %s: %v", dst, err)
		}
	}
}

// Several names in one get, one with braces inside it: each is fetched
// whole. (Regression: "a{b}c" was split at its braces into "ab" and "c".)
func TestGetSeveralNamesWithBraces(t *testing.T) {
	root, back := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	names := []string{"a{b}c", "{x}", "my {odd} file", "one"}
	for i, n := range names {
		writeFile(t, filepath.Join(root, n), randomBytes(100+i, uint64(i)))
	}
	args := []string{}
	for _, n := range names {
		args = append(args, target(srv.addr, n))
	}
	if r := run(t, srv, back, nil, "get", append(args, ".")...); r.code != 0 {
		t.Fatalf("get of %q: %s", names, r)
	}
	for _, n := range names {
		sameFile(t, filepath.Join(root, n), filepath.Join(back, n))
	}
}

// A name with wildcard characters, escaped with backslashes, asks for
// that one file: it may go to standard output or to a name of the
// user's, which a wildcard may not, and when no file is so named the
// server's fallback to the pattern brings nothing in its place. (QA:
// a[1].txt could not be fetched to - or to another name.)
func TestGetEscapedWildcardName(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "a[1].txt"), []byte("literal\n"))
	writeFile(t, filepath.Join(root, "a1.txt"), []byte("matched\n"))
	writeFile(t, filepath.Join(root, "s*.txt"), []byte("star\n"))
	writeFile(t, filepath.Join(root, "sx.txt"), []byte("other\n"))

	if r := run(t, srv, local, nil, "get", target(srv.addr, `a\[1\].txt`), "-"); r.code != 0 || r.stdout != "literal\n" {
		t.Errorf("get a\\[1\\].txt -: %s", r)
	}
	if r := run(t, srv, local, nil, "get", target(srv.addr, `s\*.txt`), "-"); r.code != 0 || r.stdout != "star\n" {
		t.Errorf("get s\\*.txt -: %s", r)
	}
	if r := run(t, srv, local, nil, "get", target(srv.addr, `a\[1\].txt`), "copy.txt"); r.code != 0 {
		t.Errorf("get a\\[1\\].txt copy.txt: %s", r)
	}
	if b, err := os.ReadFile(filepath.Join(local, "copy.txt")); err != nil || string(b) != "literal\n" {
		t.Errorf("copy.txt: %q, %v", b, err)
	}
	// Into a directory, by its own name.
	if r := run(t, srv, local, nil, "get", target(srv.addr, `a\[1\].txt`), "d/"); r.code != 0 {
		t.Errorf("get a\\[1\\].txt d/: %s", r)
	}
	if ents, _ := os.ReadDir(filepath.Join(local, "d")); len(ents) != 1 || ents[0].Name() != "a[1].txt" {
		t.Errorf("d holds %v, want a[1].txt alone", ents)
	}
	// Unescaped, it is still a pattern when no directory is named.
	if r := run(t, srv, local, nil, "get", target(srv.addr, "a[1].txt"), "-"); r.code != 2 {
		t.Errorf("get a[1].txt - (a wildcard): %s; want exit 2", r)
	}

	// No file of the name: the pattern's match is refused, not taken.
	if err := os.Remove(filepath.Join(root, "a[1].txt")); err != nil {
		t.Fatal(err)
	}
	if r := run(t, srv, local, nil, "get", target(srv.addr, `a\[1\].txt`), "-"); r.code == 0 || r.stdout != "" {
		t.Errorf("get a\\[1\\].txt - with only a1.txt there: %s", r)
	}
	if r := run(t, srv, local, nil, "get", target(srv.addr, `a\[1\].txt`), "e/"); r.code == 0 {
		t.Errorf("get a\\[1\\].txt e/ with only a1.txt there: %s", r)
	}
	if _, err := os.Stat(filepath.Join(local, "e", "a1.txt")); err == nil {
		t.Error("a1.txt was stored for a\\[1\\].txt")
	}
}

// A file sent to a new name that a kerf server then refuses (here for
// room: a sparse file larger than its free space) says why, and not that
// the server "would not change into" the name: a kerf server said there
// was no such directory, so the name was meant as a file's (QA: the
// note, meant for a classic server's ambiguous refusal, came with every
// such failure).
func TestRefusedAsNameSaysNoDirectoryNote(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(local, "big.img")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(st.Bavail)*int64(st.Bsize) + 1<<30); err != nil {
		t.Fatalf("a sparse file larger than the free space: %v", err)
	}
	f.Close()
	r := run(t, srv, local, nil, "send", "big.img", target(srv.addr, "new.img"))
	if r.code != 4 || !strings.Contains(r.stderr, "free") {
		t.Fatalf("send of a file larger than the server's free space: %s; want exit 4 saying why", r)
	}
	if strings.Contains(r.stderr, "would not change into") {
		t.Errorf("the refusal came with a note about a directory: %s", r)
	}
	noFile(t, filepath.Join(root, "new.img"))
}
