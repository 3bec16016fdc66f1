package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// A get whose files were refused locally (a directory or a symbolic link
// in the way) must fail (exit 4) naming them, like send does, while the
// other files arrive. (Regression: get printed the per-file errors and
// exited 0.)
func TestGetRefusedFileFailsTransfer(t *testing.T) {
	for _, mode := range []string{"dual", "classic"} {
		t.Run(mode, func(t *testing.T) {
			root, back := t.TempDir(), t.TempDir()
			srv := startServer(t, root, serverOpts{classic: mode == "classic"})
			for _, n := range []string{"a.bin", "b.bin", "c.bin"} {
				writeFile(t, filepath.Join(root, n), []byte("from the server: "+n))
			}
			if err := os.Mkdir(filepath.Join(back, "a.bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			outside := filepath.Join(t.TempDir(), "outside")
			writeFile(t, outside, []byte("untouched"))
			if err := os.Symlink(outside, filepath.Join(back, "c.bin")); err != nil {
				t.Fatal(err)
			}
			args := []string{target(srv.addr, "a.bin"), target(srv.addr, "b.bin"), target(srv.addr, "c.bin"), "."}
			if mode == "classic" {
				args = append([]string{"--classic"}, args...)
			}
			for _, global := range [][]string{nil, {"--json"}} {
				r := run(t, srv, back, global, "get", args...)
				sameFile(t, filepath.Join(root, "b.bin"), filepath.Join(back, "b.bin"))
				if b, _ := os.ReadFile(outside); string(b) != "untouched" {
					t.Errorf("the file behind the symbolic link was changed: %q", b)
				}
				if r.code != 4 || !strings.Contains(r.stderr, "2 file(s) not received: a.bin, c.bin") {
					t.Errorf("get %v: want exit 4 naming a.bin and c.bin, got %s", global, r)
				}
				if global == nil {
					continue
				}
				evs := parseEvents(t, r.stdout)
				errs := eventsNamed(evs, "file_error")
				if len(errs) != 2 || errs[0].Name != "a.bin" || errs[1].Name != "c.bin" {
					t.Errorf("want file_error for a.bin and c.bin:\n%s", r.stdout)
				}
				if last := evs[len(evs)-1]; last.Event != "error" || !strings.Contains(last.Error, "not received") {
					t.Errorf("--json of a get with refused files should end with an error event:\n%s", r.stdout)
				}
				os.Remove(filepath.Join(back, "b.bin"))
			}
		})
	}
}

// kerf serial receive fails the same way when a file is refused.
func TestSerialReceiveRefusedFileFails(t *testing.T) {
	a, b := ptyPair(t)
	local, in := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "a.bin"), []byte("refused"))
	writeFile(t, filepath.Join(local, "b.bin"), []byte("accepted"))
	if err := os.Mkdir(filepath.Join(in, "a.bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	recv := startKerf(t, "serial", "receive", "--line", b, "--dir", in)
	r := run(t, nil, local, nil, "serial", "send", "--line", a, "a.bin", "b.bin")
	if r.code != 4 {
		t.Errorf("send: want exit 4, got %s", r)
	}
	err := recv.wait(t)
	if ee, _ := err.(*exec.ExitError); ee == nil || ee.ExitCode() != 4 || !strings.Contains(recv.out.String(), "1 file(s) not received: a.bin") {
		t.Errorf("receive: want exit 4 naming a.bin, got %v:\n%s", err, recv.out.String())
	}
	sameFile(t, filepath.Join(local, "b.bin"), filepath.Join(in, "b.bin"))
}

// hostileNames are file names a server can offer that would drive a
// terminal, or forge lines, if printed raw.
var hostileNames = []string{
	"e\x1b[31mRED\x1b[0m",
	"cr\rover",
	"csi\xc2\x9b2J",
	"tab\tname",
	"nl\nforged",
	"bad\xffutf8",
}

// terminalSafe reports the first byte offset of s that a terminal would
// act on: a control character other than the newline ending a line, DEL,
// a C1 control, or bytes that are not UTF-8.
func terminalSafe(s string) (int, bool) {
	for i, r := range s {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0) || r == utf8.RuneError {
			return i, false
		}
	}
	return 0, true
}

// Names a server sends (here through a wildcard GET of files named on the
// server's disk) reach the terminal escaped, in the per-file error lines
// and in the closing summary; ordinary Unicode names arrive untouched.
// (Regression: "kerf: <name>: ..." printed the name raw.)
func TestGetHostileNamesPrintedEscaped(t *testing.T) {
	root, back := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	for _, n := range hostileNames {
		writeFile(t, filepath.Join(root, n), []byte("x"))
	}
	writeFile(t, filepath.Join(root, "日本語 🙂 é.txt"), []byte("unicode"))
	r := run(t, srv, back, nil, "get", target(srv.addr, "*"), ".")
	if i, ok := terminalSafe(r.stderr); !ok {
		t.Errorf("raw control byte at %d of stderr: %q", i, r.stderr)
	}
	for _, want := range []string{`kerf: e\x1b[31mRED\x1b[0m: `, `csi\u009b2J`, `cr\x0dover`, `tab\x09name`, `nl\x0aforged`, "not received"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not show %q:\n%s", want, r.stderr)
		}
	}
	if r.code != 4 {
		t.Errorf("exit %d, want 4 (files refused)", r.code)
	}
	sameFile(t, filepath.Join(root, "日本語 🙂 é.txt"), filepath.Join(back, "日本語 🙂 é.txt"))
}

// kerf ls prints a listing with every control inside a line escaped, tab
// and CR included, and keeps Unicode names as they are.
func TestLsHostileNamesPrintedEscaped(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	for _, n := range hostileNames {
		writeFile(t, filepath.Join(root, n), []byte("x"))
	}
	writeFile(t, filepath.Join(root, "日本語 🙂 é.txt"), []byte("unicode"))
	r := mustRun(t, srv, local, nil, "ls", srv.addr)
	if i, ok := terminalSafe(r.stdout); !ok {
		t.Errorf("raw control byte at %d of the listing: %q", i, r.stdout)
	}
	// The server quotes such names (Go's escapes), so each is one line.
	for _, want := range []string{` "e\x1b[31mRED\x1b[0m"` + "\n", ` "tab\tname"` + "\n", ` "cr\rover"` + "\n", ` "csi\u009b2J"` + "\n", ` "bad\xffutf8"` + "\n", ` "nl\nforged"` + "\n", " 日本語 🙂 é.txt\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("listing does not show %q:\n%s", want, r.stdout)
		}
	}
}

// kerf --json ls prints an entry event per file of a kerf server's
// listing, with exact names, then done. (Regression: it printed the
// plain-text listing.)
func TestJSONLs(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "a/f.txt"), []byte("hello\n"))
	writeFile(t, filepath.Join(root, "a/tab\tname 日本.txt"), nil)
	if err := os.Mkdir(filepath.Join(root, "a/c"), 0o755); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	os.Chtimes(filepath.Join(root, "a/f.txt"), mtime, mtime)

	r := mustRun(t, srv, local, []string{"--json"}, "ls", target(srv.addr, "a"))
	evs := parseEvents(t, r.stdout)
	ents := eventsNamed(evs, "entry")
	if len(ents) != 3 || evs[len(evs)-1].Event != "done" {
		t.Fatalf("want 3 entry events and done:\n%s", r.stdout)
	}
	byName := map[string]event{}
	for _, e := range ents {
		if e.Path != "a" {
			t.Errorf("entry %+v: path %q, want a", e, e.Path)
		}
		byName[e.Name] = e
	}
	if e := byName["c"]; e.Type != "dir" || !strings.HasPrefix(e.Mode, "d") {
		t.Errorf("directory c: %+v", e)
	}
	if e := byName["f.txt"]; e.Type != "file" || e.Size == nil || *e.Size != 6 || e.Modified != "2024-05-06T07:08:09Z" || e.Mode != "-rw-r--r--" {
		t.Errorf("file f.txt: %+v", e)
	}
	if e, ok := byName["tab\tname 日本.txt"]; !ok || e.Type != "file" || e.Size == nil || *e.Size != 0 {
		t.Errorf("the name with a tab is not exact: %+v\n%s", e, r.stdout)
	}

	// A name with a newline is one entry, exact, even when what follows
	// the newline looks like a listing line of its own (the server
	// quotes it). Before, it split its line.
	forged := "innocent\n-rw-r--r--          123 2020-01-01 00:00:00 important.db"
	writeFile(t, filepath.Join(root, "b", forged), []byte("x"))
	writeFile(t, filepath.Join(root, "b/{z}"), []byte("braced"))
	r = mustRun(t, srv, local, []string{"--json"}, "ls", target(srv.addr, "b"))
	evs = parseEvents(t, r.stdout)
	ents = eventsNamed(evs, "entry")
	if len(ents) != 2 || len(eventsNamed(evs, "listing")) != 0 {
		t.Fatalf("want two entries:\n%s", r.stdout)
	}
	names := []string{ents[0].Name, ents[1].Name}
	slices.Sort(names)
	if names[0] != forged || names[1] != "{z}" || ents[0].Size == nil || *ents[0].Size != 1 {
		t.Errorf("entries %q, want %q and {z}:\n%s", names, forged, r.stdout)
	}
}

// A name that is not UTF-8 (Latin-1 here) is a name like any other: it
// is sent, fetched by its exact bytes and removed, and a --json event
// gives it exactly in name_base64, as a JSON string cannot.
func TestNonUTF8Names(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	name := "caf\xe9 \xff.txt"
	writeFile(t, filepath.Join(local, name), []byte("latin-1"))
	r := mustRun(t, srv, local, []string{"--json"}, "send", name, target(srv.addr, "in/"))
	sameFile(t, filepath.Join(local, name), filepath.Join(root, "in", name))
	if done := eventsNamed(parseEvents(t, r.stdout), "file_done"); len(done) != 1 || done[0].NameB64 != base64.StdEncoding.EncodeToString([]byte(name)) {
		t.Errorf("file_done without the exact name in name_base64:\n%s", r.stdout)
	}
	mustRun(t, srv, back, nil, "get", target(srv.addr, "in/"+name), ".")
	sameFile(t, filepath.Join(local, name), filepath.Join(back, name))
	r = mustRun(t, srv, back, []string{"--json"}, "ls", target(srv.addr, "in"))
	if ents := eventsNamed(parseEvents(t, r.stdout), "entry"); len(ents) != 1 || ents[0].NameB64 != base64.StdEncoding.EncodeToString([]byte(name)) {
		t.Errorf("ls --json without the exact name:\n%s", r.stdout)
	}
	mustRun(t, srv, back, nil, "rm", target(srv.addr, "in/"+name))
	noFile(t, filepath.Join(root, "in", name))
}

// ls -R lists the whole tree, each entry under its path, names with
// newlines and spaces exact; the plain listing prints the same lines.
func TestLsRecursive(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "t/a.txt"), []byte("a"))
	writeFile(t, filepath.Join(root, "t/sub dir/deep/b\nc"), []byte("bc"))
	writeFile(t, filepath.Join(root, "elsewhere"), nil)
	when := time.Date(2024, 1, 1, 10, 0, 0, 100_000_000, time.UTC)
	os.Chtimes(filepath.Join(root, "t/a.txt"), when, when)
	r := mustRun(t, srv, local, []string{"--json"}, "ls", "-R", target(srv.addr, "t"))
	var got []string
	for _, e := range eventsNamed(parseEvents(t, r.stdout), "entry") {
		got = append(got, e.Type+" "+e.Name)
		if e.Name == "t/a.txt" && e.Modified != "2024-01-01T10:00:00.1Z" {
			t.Errorf("t/a.txt modified %q, want its fraction of a second: 2024-01-01T10:00:00.1Z", e.Modified)
		}
	}
	want := []string{"dir t", "file t/a.txt", "dir t/sub dir", "dir t/sub dir/deep", "file t/sub dir/deep/b\nc"}
	if !slices.Equal(got, want) {
		t.Errorf("ls -R: %q\nwant %q", got, want)
	}
	r = mustRun(t, srv, local, nil, "ls", "-R", target(srv.addr, "t/sub dir"))
	if !strings.Contains(r.stdout, " t/sub dir/deep/\n") || !strings.Contains(r.stdout, ` "t/sub dir/deep/b\nc"`) || strings.Contains(r.stdout, "a.txt") {
		t.Errorf("ls -R t/sub dir:\n%s", r.stdout)
	}
	// A file has one time whichever way it is listed: to the nanosecond
	// in --json (QA: whole seconds without -R), to the second in text.
	r = mustRun(t, srv, local, []string{"--json"}, "ls", target(srv.addr, "t"))
	if ents := eventsNamed(parseEvents(t, r.stdout), "entry"); len(ents) != 2 || ents[0].Name != "a.txt" || ents[0].Modified != "2024-01-01T10:00:00.1Z" {
		t.Errorf("ls --json t: %+v\nwant a.txt modified 2024-01-01T10:00:00.1Z", ents)
	}
	for _, args := range [][]string{{"ls", target(srv.addr, "t")}, {"ls", "-R", target(srv.addr, "t")}} {
		r = mustRun(t, srv, local, nil, args[0], args[1:]...)
		if !strings.Contains(r.stdout, " 2024-01-01 10:00:00 ") || strings.Contains(r.stdout, "10:00:00.") {
			t.Errorf("%q: a.txt's time not to the second:\n%s", args, r.stdout)
		}
	}
}

// ls -R of a tree with a directory the server may not read lists the
// rest, names that directory, and fails (exit 4), in text and in JSON;
// a tree it reads whole still succeeds. (QA: it looked complete, exit 0.)
func TestLsRecursiveSaysWhatItCannotRead(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	for _, f := range []string{"t/pub/a", "t/priv/s", "t/z/b"} {
		writeFile(t, filepath.Join(root, f), []byte(f))
	}
	if err := os.Chmod(filepath.Join(root, "t/priv"), 0o700); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, root, serverOpts{uid: 65534})
	r := run(t, srv, local, nil, "ls", "-R", target(srv.addr, "t"))
	if r.code != 4 || !strings.Contains(r.stdout, " t/z/b\n") || !strings.Contains(r.stdout, " t/priv/\n") ||
		!strings.Contains(r.stderr, "t/priv: cannot list its contents: permission denied") || !strings.Contains(r.stderr, "1 directory could not be listed") {
		t.Errorf("ls -R t: %s", r)
	}
	r = run(t, srv, local, []string{"--json"}, "ls", "-R", target(srv.addr, "t"))
	evs := parseEvents(t, r.stdout)
	if errs := eventsNamed(evs, "file_error"); r.code != 4 || len(errs) != 1 || errs[0].Name != "t/priv" || len(eventsNamed(evs, "entry")) != 6 {
		t.Errorf("ls -R --json t: %s", r)
	}
	if r := run(t, srv, local, nil, "ls", "-R", target(srv.addr, "t/priv")); r.code != 4 || !strings.Contains(r.stderr, "t/priv: cannot list") {
		t.Errorf("ls -R t/priv: %s", r)
	}
	if r := run(t, srv, local, nil, "ls", "-R", target(srv.addr, "t/pub")); r.code != 0 || !strings.Contains(r.stdout, " t/pub/a\n") {
		t.Errorf("ls -R t/pub: %s", r)
	}
}

// A remote name with escaped wildcards is one name for rm and ls: when
// it is absent, the files it would match as a pattern are neither
// deleted nor listed (QA: rm of 'bk/data\[2024\].tar' deleted
// data0.tar, data2.tar and data4.tar, exit 0), and when present, it alone
// is. mkdir and mv, which match nothing, take it without the escapes.
func TestEscapedRemoteNamesAreOneName(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	for _, f := range []string{"bk/data0.tar", "bk/data2.tar", "bk/data4.tar", "bk/x[1].txt", "bk/x1.txt"} {
		writeFile(t, filepath.Join(root, f), []byte(f))
	}
	if r := run(t, srv, local, nil, "rm", target(srv.addr, `bk/data\[2024\].tar`)); r.code != 4 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("rm of an absent escaped name: %s", r)
	}
	if r := run(t, srv, local, nil, "ls", target(srv.addr, `bk/data\[2024\].tar`)); r.code != 4 || strings.Contains(r.stdout, "data0") {
		t.Errorf("ls of an absent escaped name: %s", r)
	}
	if r := run(t, srv, local, nil, "ls", "-R", target(srv.addr, `bk/data\[2024\].tar`)); r.code != 4 || strings.Contains(r.stdout, "data0") {
		t.Errorf("ls -R of an absent escaped name: %s", r)
	}
	for _, f := range []string{"data0.tar", "data2.tar", "data4.tar"} {
		if _, err := os.Stat(filepath.Join(root, "bk", f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	r := mustRun(t, srv, local, nil, "ls", target(srv.addr, `bk/x\[1\].txt`))
	if !strings.Contains(r.stdout, "x[1].txt") || strings.Contains(r.stdout, "x1.txt") {
		t.Errorf("ls of x\\[1\\].txt:\n%s", r.stdout)
	}
	mustRun(t, srv, local, nil, "rm", target(srv.addr, `bk/x\[1\].txt`))
	noFile(t, filepath.Join(root, "bk/x[1].txt"))
	if _, err := os.Stat(filepath.Join(root, "bk/x1.txt")); err != nil {
		t.Errorf("rm x\\[1\\].txt took x1.txt: %v", err)
	}
	mustRun(t, srv, local, nil, "mkdir", target(srv.addr, `bk/d\*`))
	mustRun(t, srv, local, nil, "mv", target(srv.addr, `bk/d\*`), target(srv.addr, `bk/e\?`))
	if fi, err := os.Stat(filepath.Join(root, "bk/e?")); err != nil || !fi.IsDir() {
		t.Errorf("mkdir d\\* then mv to e\\?: %v", err)
	}
	if r := run(t, srv, local, nil, "rm", target(srv.addr, `bk/x\[1\]*`)); r.code != 2 {
		t.Errorf("rm of a name with escaped and unescaped wildcards: %s", r)
	}
	// The unescaped pattern is still one.
	mustRun(t, srv, local, nil, "rm", target(srv.addr, "bk/data[24].tar"))
	noFile(t, filepath.Join(root, "bk/data2.tar"))
	noFile(t, filepath.Join(root, "bk/data4.tar"))
}

// Remote commands act on the name given: one in braces is not taken
// for C-Kermit's grouping braces, and a pattern with a space is one
// pattern. (Regression: rm host/{z} deleted z, and ls "host/d/ *"
// listed the top of the tree.)
func TestRemoteCommandsTakeNamesLiterally(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "{z}"), []byte("braced"))
	writeFile(t, filepath.Join(root, "z"), []byte("plain"))
	writeFile(t, filepath.Join(root, "d/ lead"), []byte("x"))
	writeFile(t, filepath.Join(root, "d/other"), []byte("x"))

	mustRun(t, srv, local, nil, "rm", target(srv.addr, "{z}"))
	noFile(t, filepath.Join(root, "{z}"))
	if b, err := os.ReadFile(filepath.Join(root, "z")); err != nil || string(b) != "plain" {
		t.Errorf("rm {z} touched z: %q, %v", b, err)
	}
	// So do brackets, unescaped (README's rm line, QA ag L10).
	writeFile(t, filepath.Join(root, "a[1].txt"), []byte("bracketed"))
	writeFile(t, filepath.Join(root, "a1.txt"), []byte("plain"))
	mustRun(t, srv, local, nil, "rm", target(srv.addr, "a[1].txt"))
	noFile(t, filepath.Join(root, "a[1].txt"))
	if b, err := os.ReadFile(filepath.Join(root, "a1.txt")); err != nil || string(b) != "plain" {
		t.Errorf("rm a[1].txt touched a1.txt: %q, %v", b, err)
	}
	mustRun(t, srv, local, nil, "mv", target(srv.addr, "z"), target(srv.addr, "{q}"))
	if b, err := os.ReadFile(filepath.Join(root, "{q}")); err != nil || string(b) != "plain" {
		t.Errorf("mv to {q}: %q, %v", b, err)
	}
	mustRun(t, srv, local, nil, "mkdir", target(srv.addr, "{mk}"))
	if fi, err := os.Stat(filepath.Join(root, "{mk}")); err != nil || !fi.IsDir() {
		t.Errorf("mkdir {mk}: %v", err)
	}
	if r := run(t, srv, local, nil, "rmdir", target(srv.addr, "d")); r.code != 4 {
		t.Errorf("rmdir of a directory with files in it: %s", r)
	}
	mustRun(t, srv, local, nil, "rmdir", target(srv.addr, "{mk}"))
	noFile(t, filepath.Join(root, "{mk}"))
	writeFile(t, filepath.Join(local, "hello.txt"), []byte("hello"))
	mustRun(t, srv, local, nil, "send", filepath.Join(local, "hello.txt"), target(srv.addr, "{top}/"))
	if b, err := os.ReadFile(filepath.Join(root, "{top}/hello.txt")); err != nil || string(b) != "hello" {
		t.Errorf("send into {top}: %q, %v", b, err)
	}
	r := mustRun(t, srv, local, []string{"--json"}, "ls", target(srv.addr, "d/ *"))
	ents := eventsNamed(parseEvents(t, r.stdout), "entry")
	if len(ents) != 1 || ents[0].Name != " lead" {
		t.Errorf("ls 'd/ *' listed %+v, want the one name beginning with a space", ents)
	}
}

// Failures of ls, mkdir, rm and mv with --json end with an error event,
// as a failed send or get does, and successes with done.
func TestJSONRemoteCommandFailures(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "d/f"), []byte("x"))
	refused := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"mkdir", target(srv.addr, "new")}, 0, ""},
		{[]string{"mkdir", target(srv.addr, "../escape")}, 4, "unsafe"},
		{[]string{"rm", target(srv.addr, "nonexistent")}, 4, "nonexistent"},
		{[]string{"rm", target(srv.addr, "d")}, 4, "directory"},
		{[]string{"mv", target(srv.addr, "nope"), target(srv.addr, "x")}, 4, "nope"},
		{[]string{"ls", target(srv.addr, "nothing-here")}, 4, "nothing-here"},
		// A pattern that matches nothing, as rm and get say it (QA:
		// exit 0, empty); a directory that holds nothing is listed.
		{[]string{"ls", target(srv.addr, "d/none*")}, 4, "no files match"},
		{[]string{"ls", "-R", target(srv.addr, "none*")}, 4, "no files match"},
		{[]string{"ls", target(srv.addr, "new")}, 0, ""},
		{[]string{"ls", "-R", target(srv.addr, "d*")}, 0, ""},
		{[]string{"ls", target(refused, "d")}, 3, "connection refused"},
		{[]string{"send", filepath.Join(local, "absent.txt"), target(srv.addr, "")}, 4, "absent.txt"},
		{[]string{"mkdir", srv.addr}, 2, "names no remote path"},
		{[]string{"mv", srv.addr + "/", target(srv.addr, "foo")}, 2, "names no remote path"},
		{[]string{"mv", target(srv.addr, "d"), srv.addr + "/"}, 2, "names no remote path"},
	} {
		r := run(t, srv, local, []string{"--json"}, c.args[0], c.args[1:]...)
		evs := parseEvents(t, r.stdout)
		if r.code != c.code || len(evs) == 0 {
			t.Errorf("kerf --json %v: want exit %d and JSON events, got %s", c.args, c.code, r)
			continue
		}
		last := evs[len(evs)-1]
		switch {
		case c.code == 0 && last.Event != "done":
			t.Errorf("kerf --json %v: want done last:\n%s", c.args, r.stdout)
		case c.code != 0 && (last.Event != "error" || !strings.Contains(last.Error, c.msg)):
			t.Errorf("kerf --json %v: want an error event saying %q last:\n%s", c.args, c.msg, r.stdout)
		}
	}
	noFile(t, filepath.Join(filepath.Dir(root), "escape"))
}

// A partial file left by a transfer that did not finish is listed, and
// its owner can delete it (without a shell on the server, the only way
// to get the space back); GET never serves it.
func TestLeftoverPartialListedAndRemovable(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	part := partName(filepath.Join(root, "big.iso"))
	writeFile(t, part, randomBytes(1000, 1))
	r := mustRun(t, srv, local, nil, "ls", srv.addr)
	if !strings.Contains(r.stdout, " "+filepath.Base(part)+"\n") {
		t.Errorf("ls does not show the partial:\n%s", r.stdout)
	}
	if r := run(t, srv, local, nil, "get", target(srv.addr, filepath.Base(part)), "."); r.code == 0 {
		t.Errorf("get served a partial file:\n%s", r)
	}
	mustRun(t, srv, local, nil, "rm", target(srv.addr, filepath.Base(part)))
	noFile(t, part)
}

// kerf demo, the README's first command, runs its round trip and
// verifies it (small sizes here). (Regression: it broke when servers
// stopped making missing roots.)
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, kerfBin, "demo", "--mb", "4", "--small", "20").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verified:") {
		t.Fatalf("kerf demo: %v\n%s", err, out)
	}
	// The sample it names is said to go, and goes; one file is said as
	// one (QA ag L11: "1 files", and a directory gone when looked for).
	m := regexp.MustCompile(`in 21 files under (\S+) \(removed when the demo ends\)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("kerf demo does not say its sample goes:\n%s", out)
	}
	noFile(t, string(m[1]))
	out, err = exec.CommandContext(ctx, kerfBin, "demo", "--mb", "0", "--small", "0", "--streams", "auto").CombinedOutput()
	if err != nil || !strings.Contains(string(out), " in a file under ") {
		t.Errorf("kerf demo of one file: %v\n%s", err, out)
	}
}

// With --json, what a local walk passes over (a FIFO, a link to a
// directory) is a file_skipped event with the reason, not only a line on
// stderr; the rest is sent and the exit is 0.
func TestJSONLocalSkips(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "t/a.txt"), []byte("a"))
	if err := syscall.Mkfifo(filepath.Join(local, "t/pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(local, "t/self")); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, srv, local, []string{"--json"}, "send", "-r", "t", srv.addr)
	sameFile(t, filepath.Join(local, "t/a.txt"), filepath.Join(root, "t/a.txt"))
	reasons := map[string]string{}
	for _, e := range eventsNamed(parseEvents(t, r.stdout), "file_skipped") {
		reasons[filepath.Base(e.Name)] = e.Reason
	}
	if !strings.Contains(reasons["pipe"], "named pipe") || !strings.Contains(reasons["self"], "link to a directory") || len(reasons) != 2 {
		t.Fatalf("file_skipped events %q:\n%s", reasons, r.stdout)
	}
}

// Many files failing at once (here, 70 names the server has as
// directories) get a line each only up to a bound, then a count; the
// closing error names the first ten and counts the rest. (A killed
// server once printed a line for each of thousands of files.)
func TestManyFailuresBoundedOutput(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	var names []string
	for i := range 70 {
		n := fmt.Sprintf("f%02d", i)
		names = append(names, n)
		writeFile(t, filepath.Join(local, n), []byte("x"))
		if err := os.Mkdir(filepath.Join(root, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := run(t, srv, local, nil, "send", append(names, target(srv.addr, ""))...)
	if r.code != 4 {
		t.Fatalf("want exit 4: %s", r)
	}
	perFile := 0
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "kerf: f") {
			perFile++
		}
	}
	if perFile != 50 || !strings.Contains(r.stderr, "20 more file(s) failed") || !strings.Contains(r.stderr, "and 60 more") {
		t.Fatalf("%d per-file lines (want 50), then a count of 20 and a summary of ten and 60 more:\n%s", perFile, r.stderr)
	}
}

// A name with a backslash, which kerf itself never stores but a server
// may have, is reached by the name ls shows: a backslash escapes only
// wildcards, brackets, braces, a space and itself (QA: rm of 't\y'
// looked for "ty", mv of 's\x' for "sx"); written doubled it is the
// same name.
func TestBackslashNamesGivenAsListed(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	for _, f := range []string{`bad/t\y`, `bad/s\x`, `bad/u\v`} {
		writeFile(t, filepath.Join(root, f), []byte(f))
	}
	srv := startServer(t, root, serverOpts{})
	if r := mustRun(t, srv, local, nil, "ls", target(srv.addr, "bad")); !strings.Contains(r.stdout, ` "t\\y"`+"\n") {
		t.Fatalf("ls bad:\n%s", r.stdout)
	}
	mustRun(t, srv, local, nil, "rm", target(srv.addr, `bad/t\y`))
	noFile(t, filepath.Join(root, `bad/t\y`))
	mustRun(t, srv, local, nil, "mv", target(srv.addr, `bad/s\x`), target(srv.addr, "bad/sx"))
	noFile(t, filepath.Join(root, `bad/s\x`))
	if _, err := os.Stat(filepath.Join(root, "bad/sx")); err != nil {
		t.Errorf("mv of s\\x: %v", err)
	}
	mustRun(t, srv, local, nil, "rm", target(srv.addr, `bad/u\\v`))
	noFile(t, filepath.Join(root, `bad/u\v`))
}

// Every name a server has is reached by the name ls shows, those it
// shows quoted (a control character, a leading or trailing space, a
// leading quote, bytes not UTF-8, a character that reorders text)
// included: each shown name given back to rm removes that file and no
// other, and mv and get take the quoted form too (QA r: only the raw
// bytes worked, and "esc\x1b[1m" was "a syntax error in pattern").
func TestQuotedNamesGivenAsListed(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	// (c\d beside c\\d, a\* beside a*: shown bare, a backslash name
	// given back named the other file; QA ag.)
	odd := []string{" lead", "trail ", "tab\tx", "esc\x1b[1m", "\xff\xfe", "rtl\u202eX", `"q`, "nl\nname", "sp ace*", `c\d`, `c\\d`, `a\*`}
	for _, n := range odd {
		writeFile(t, filepath.Join(root, "odd", n), []byte(n))
	}
	writeFile(t, filepath.Join(root, "odd", "keep"), []byte("keep"))
	writeFile(t, filepath.Join(root, "odd", "a*"), []byte("a*"))
	srv := startServer(t, root, serverOpts{})
	r := mustRun(t, srv, local, nil, "ls", target(srv.addr, "odd"))
	var shown []string
	line := regexp.MustCompile(`^\S+ +\d+ \S+ \S+ (.+)$`) // mode, size, date, time, name
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("ls line %q", l)
		}
		if m[1] != "keep" && m[1] != "a*" {
			shown = append(shown, m[1])
		}
	}
	if len(shown) != len(odd) {
		t.Fatalf("ls showed %d odd names, want %d:\n%s", len(shown), len(odd), r.stdout)
	}
	got := t.TempDir()
	mustRun(t, srv, got, nil, "get", target(srv.addr, "odd/"+shown[0]), "first.txt")
	if b, _ := os.ReadFile(filepath.Join(got, "first.txt")); string(b) != odd[0] {
		t.Errorf("get of %s as first.txt brought %q", shown[0], b)
	}
	mustRun(t, srv, local, nil, "mv", target(srv.addr, "odd/"+shown[1]), target(srv.addr, "odd/renamed"))
	for _, s := range shown[2:] {
		mustRun(t, srv, local, nil, "rm", target(srv.addr, "odd/"+s))
	}
	mustRun(t, srv, local, nil, "rm", target(srv.addr, "odd/"+shown[0]))
	ents, _ := os.ReadDir(filepath.Join(root, "odd"))
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"a*", "keep", "renamed"}) {
		t.Errorf("left %q, want a*, keep and renamed", left)
	}
}

// A send's destination takes the escapes and quotes every remote path
// takes (QA r: 'host/sd/a\ b' went as "a\ b", refused as unsafe).
func TestSendDestinationEscapes(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "f"), []byte("f\n"))
	srv := startServer(t, root, serverOpts{})
	for dest, stored := range map[string]string{
		`sd/a\ b`:      "sd/a b",
		`sd/br\[1\]`:   "sd/br[1]",
		`sd/" lead"`:   "sd/ lead",
		`sd/dir\ x/`:   "sd/dir x/f",
		`sd/p*`:        "sd/p*",
		`sd/back\\sl/`: `sd/back\sl/f`,
	} {
		r := run(t, srv, local, nil, "send", "f", target(srv.addr, dest))
		if strings.Contains(stored, `\`) {
			// A backslash in a name is refused (README).
			if r.code != 4 {
				t.Errorf("send to %s: %s; want a refusal", dest, r)
			}
			continue
		}
		if r.code != 0 {
			t.Errorf("send to %s: %s", dest, r)
			continue
		}
		if b, err := os.ReadFile(filepath.Join(root, stored)); err != nil || string(b) != "f\n" {
			t.Errorf("send to %s: %s holds %q, %v", dest, stored, b, err)
		}
	}
}
