package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --exclude leaves files and whole directories out of a send -r and a
// get -r alike, by the same rules (kermit.Exclusions); a bad pattern is
// a usage error.
func TestExclude(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	all := []string{"proj/main.go", "proj/main.o", "proj/.git/HEAD", "proj/.git/refs/x", "proj/build/out.bin", "proj/doc/build", "proj/doc/a.txt", "notes.o"}
	for _, f := range all {
		writeFile(t, filepath.Join(local, f), []byte(f))
	}
	kept := []string{"proj/main.go", "proj/doc/build", "proj/doc/a.txt"}
	gone := []string{"proj/main.o", "proj/.git", "proj/build", "notes.o"}
	excl := []string{"--exclude", "*.o", "--exclude", ".git", "--exclude", "build/"}
	// The send takes them from a file (--exclude-from, as rsync's: its
	// comments and blank lines skipped, CRLF line ends taken), one flag
	// beside it.
	from := filepath.Join(t.TempDir(), "excludes")
	lines := "# build products\r\n*.o\r\n\n; and the repository\n.git\n"
	for i := range 300 {
		// More than a get may give a server (256): a send matches its
		// own (QA w: refused).
		lines += fmt.Sprintf("nomatch%d*.tmp\n", i)
	}
	writeFile(t, from, []byte(lines))
	mustRun(t, srv, local, nil, "send", "-r", "--exclude-from", from, "--exclude", "build/", "proj", "notes.o", srv.addr)
	check := func(dir string) {
		t.Helper()
		for _, f := range kept {
			sameFile(t, filepath.Join(local, f), filepath.Join(dir, f))
		}
		for _, f := range gone {
			if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
				t.Errorf("%s is in %s, though excluded", f, dir)
			}
		}
	}
	check(root)

	// The server has everything; the get leaves out the same.
	for _, f := range all {
		writeFile(t, filepath.Join(root, f), []byte(f))
	}
	if r := run(t, srv, back, nil, "get", "-r", "--exclude-from", from, target(srv.addr, "proj"), "."); r.code != 2 || !strings.Contains(r.stderr, "at most 256") {
		t.Errorf("a get with more patterns than a server keeps: %s; want exit 2", r)
	}
	mustRun(t, srv, back, nil, "get", append(append([]string{"-r", "--sessions", "2"}, excl...), target(srv.addr, "proj"), target(srv.addr, "notes.o"), ".")...)
	check(back)

	// A resumed get says nothing of excluded files, even where a whole
	// copy of one is here (it named each "already there", and counted it).
	for _, f := range []string{"proj/main.o", "notes.o"} {
		writeFile(t, filepath.Join(back, f), []byte(f))
		fi, err := os.Stat(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		os.Chtimes(filepath.Join(back, f), fi.ModTime(), fi.ModTime())
	}
	r := mustRun(t, srv, back, []string{"--json"}, "get", append(append([]string{"-r", "--resume"}, excl...), target(srv.addr, "proj"), ".")...)
	for _, e := range parseEvents(t, r.stdout) {
		if strings.HasSuffix(e.Name, ".o") || strings.Contains(e.Name, ".git") || strings.Contains(e.Name, "build/") {
			t.Errorf("resumed get told of an excluded file: %+v", e)
		}
	}
	if d := lastDone(t, r); d.Files == nil || *d.Files != 3 {
		t.Errorf("resumed get: done %+v, want 3 files (those not excluded, there whole)", d)
	}

	if r := run(t, srv, local, nil, "send", "-r", "--exclude", "[", "proj", srv.addr); r.code != 2 {
		t.Errorf("--exclude '[': %s, want exit 2", r)
	}
}
