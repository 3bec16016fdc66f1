package filestore_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

func TestCleanName(t *testing.T) {
	cases := []struct {
		in, want string
		bad      bool
	}{
		{"a.txt", "a.txt", false},
		{"dir/sub/a b.txt", "dir/sub/a b.txt", false},
		{"./x//y", "x/y", false},
		{"ünïcode ñame", "ünïcode ñame", false},
		{"", "", true},
		{"/etc/passwd", "", true},
		{"../x", "", true},
		{"a/../../x", "", true},
		{"a/..", "", true},
		{"a/../b", "", true},
		{"tab\there", "", true},
		{"nl\n", "", true},
		{"del\x7f", "", true},
		{"c1\u0085", "", true},
		{`back\slash`, "", true},
		{".", "", true},
		{".x.kerf-part", "", true},
		{"x.kerf-part", "x.kerf-part", false}, // only ends like a temporary name
		{"d/.x.kerf-part", "", true},
		{"d/.x.kerf-part/inner", "", true}, // under a directory so named
		{"d/.x.kerf-partial/inner", "d/.x.kerf-partial/inner", false},
	}
	for _, c := range cases {
		got, err := filestore.CleanName(c.in)
		if err != nil && strings.Contains(err.Error(), "leaves the tree") && !strings.HasPrefix(c.in, "..") && !strings.Contains(c.in, "../..") {
			t.Errorf("CleanName(%q): %v; it does not leave the tree (QA: a/../b was said to)", c.in, err)
		}
		if c.bad {
			if !errors.Is(err, filestore.ErrUnsafeName) {
				t.Errorf("CleanName(%q) = %q, %v; want ErrUnsafeName", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("CleanName(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestIncomingAppearsOnlyWhenCommitted(t *testing.T) {
	dir := t.TempDir()
	d, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in, err := d.Create("sub/file.bin")
	if err != nil {
		t.Fatal(err)
	}
	in.WriteAt([]byte("hello"), 0)
	if _, err := os.Stat(filepath.Join(dir, "sub", "file.bin")); !os.IsNotExist(err) {
		t.Fatalf("final name exists before commit: %v", err)
	}
	mt := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := in.Commit(mt, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "sub", "file.bin"))
	if err != nil || !fi.ModTime().Equal(mt) || fi.Mode().Perm() != 0o600 {
		t.Fatalf("after commit: %v %v %v", err, fi.ModTime(), fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", ".file.bin"+filestore.PartSuffix)); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}

	// An aborted file keeps its partial (for recovery) and Partial reports it.
	in, _ = d.Create("p.bin")
	in.WriteAt([]byte("12345"), 0)
	in.Abort(true)
	in, _ = d.Create("p.bin")
	n, crc, err := in.Partial()
	if err != nil || n != 5 || crc == 0 {
		t.Errorf("Partial = %d, %08x, %v", n, crc, err)
	}
	in.Abort(false)
	if _, err := os.Stat(filepath.Join(dir, ".p.bin"+filestore.PartSuffix)); !os.IsNotExist(err) {
		t.Errorf("discarded partial still there: %v", err)
	}
}

func TestConfinement(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644)
	root := t.TempDir()
	os.Symlink(outside, filepath.Join(root, "escape"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link"))
	d, _ := filestore.Open(root)
	defer d.Close()
	if _, err := d.Create("escape/new"); err == nil {
		t.Error("created a file through a symlink leading outside")
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("file written outside the root")
	}
	if files, err := d.Match("link", false); err == nil && len(files) > 0 {
		if r, err := files[0].Open(); err == nil {
			r.Close()
			t.Error("opened a file through a symlink leading outside")
		}
	}
	if _, err := d.Match("../secret", false); err == nil {
		t.Error("matched a name outside the root")
	}
	if err := d.Chdir("escape"); err == nil {
		t.Error("changed into a directory outside the root")
	}
	if err := d.Remove("/../x"); err == nil {
		t.Error("removed a name outside the root")
	}
	ro, _ := filestore.Open(root)
	ro.ReadOnly = true
	if _, err := ro.Create("x"); err == nil {
		t.Error("read-only store accepted a file")
	}
}

func TestMatchSpecs(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a.txt", "b.txt", "c.bin", "with space.txt", "d/e.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, n)), 0o755)
		os.WriteFile(filepath.Join(root, n), []byte(n), 0o644)
	}
	d, _ := filestore.Open(root)
	defer d.Close()
	cases := []struct {
		spec      string
		recursive bool
		want      int
	}{
		{"*.txt", false, 3},
		{"a.txt c.bin", false, 2},
		{"{with space.txt} a.txt", false, 2},
		{"with space.txt", false, 1},
		{"d", true, 2}, // the directory d and its file
		{"nothing*", false, 0},
	}
	for _, c := range cases {
		files, err := d.Match(c.spec, c.recursive)
		if err != nil || len(files) != c.want {
			t.Errorf("Match(%q) = %d files, %v; want %d", c.spec, len(files), err, c.want)
		}
	}
	if _, err := d.Match("d", false); err == nil {
		t.Error("a directory matched without recursion")
	}
	// A wildcard among several names that matches nothing is a file
	// that cannot be sent, saying so (QA: passed over in silence); a
	// listing of the same names leaves it out.
	files, err := d.Match("*.txt nothing*", false)
	if err != nil || len(files) != 4 {
		t.Fatalf("Match(*.txt nothing*) = %d files, %v; want 3 and nothing*", len(files), err)
	}
	if f := files[3]; f.Name != "nothing*" {
		t.Errorf("the last is %q, want nothing*", f.Name)
	} else if _, err := f.Open(); err == nil || !strings.Contains(err.Error(), "no files match nothing*") {
		t.Errorf("opening nothing*: %v, want no files match", err)
	}
	if _, err := d.List("*.txt nothing*"); err != nil {
		t.Errorf("List(*.txt nothing*): %v", err)
	}
	// Nothing matched at all is said, as Match's opening says it (QA:
	// ls of a pattern that matched nothing succeeded, empty).
	for _, spec := range []string{"nothing* none*", "nothing*"} {
		if l, err := d.List(spec); err == nil || !strings.Contains(err.Error(), "no files match nothing*") {
			t.Errorf("List(%s) = %q, %v; want no files match", spec, l, err)
		}
	}
	// "a.txt/" names a directory, never the file (QA: get host/file/
	// took the file); "d/" is the directory.
	if files, err := d.Match("a.txt/", false); err == nil {
		t.Errorf("Match(a.txt/) = %d files, want not a directory", len(files))
	}
	if files, err := d.Match("d/", true); err != nil || len(files) != 2 {
		t.Errorf("Match(d/) = %d files, %v; want d and its file", len(files), err)
	}
}

// Truncate(0) is skipped only for a temporary file this Create made: a
// partial left by an earlier transfer, or data written since, is cut.
func TestTruncateLeftoverPartial(t *testing.T) {
	dir := t.TempDir()
	d, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in, _ := d.Create("p.bin")
	in.WriteAt([]byte("old partial"), 0)
	in.Abort(true)

	for _, tc := range []struct {
		name  string
		setup func(in kermit.Incoming)
	}{
		{"leftover", func(kermit.Incoming) {}},
		{"written since", func(in kermit.Incoming) { in.WriteAt([]byte("written since create"), 0) }},
	} {
		in, err := d.Create("p.bin")
		if err != nil {
			t.Fatal(err)
		}
		tc.setup(in)
		if err := in.Truncate(0); err != nil {
			t.Fatal(err)
		}
		in.WriteAt([]byte("new"), 0)
		if err := in.Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "p.bin")); string(b) != "new" {
			t.Errorf("%s: committed %q, want %q", tc.name, b, "new")
		}
	}
}

func TestOpenLocal(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := filestore.OpenLocal(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 4)
	if n, err := f.ReadAt(b, 4); n != 4 || err != nil || string(b) != "ents" {
		t.Fatalf("ReadAt = %d, %v, %q", n, err, b)
	}
	if _, err := filestore.OpenLocal(p + ".missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want ErrNotExist", err)
	}
}

// A received file replaces a regular file of its name, and is refused
// where the name is anything else: a symlink (even to a regular file,
// which the rename would silently replace), a FIFO, a directory. The
// thing already there is left as it was.
func TestCreateOverExisting(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "target")
	os.WriteFile(outside, []byte("keep"), 0o644)
	os.WriteFile(filepath.Join(root, "plain"), []byte("old"), 0o644)
	os.Symlink(outside, filepath.Join(root, "link"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(root, "dir"), 0o755)
	d, _ := filestore.Open(root)
	defer d.Close()
	for _, tc := range []struct {
		name string
		ok   bool
		kind string
	}{{"plain", true, ""}, {"link", false, "a symbolic link"}, {"fifo", false, "a named pipe"}, {"dir", false, "a directory"}, {"new", true, ""}} {
		in, err := d.Create(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("Create(%q): err %v, want ok=%v", tc.name, err, tc.ok)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "not a regular file ("+tc.kind+")") {
				t.Errorf("Create(%q): unclear error %v", tc.name, err)
			}
			continue
		}
		in.WriteAt([]byte("new data"), 0)
		if err := in.Commit(time.Time{}, 0o600); err != nil {
			t.Fatalf("Commit(%q): %v", tc.name, err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, tc.name)); string(b) != "new data" {
			t.Errorf("%s holds %q", tc.name, b)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("symlink target changed to %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(root, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symlink replaced: %v %v", fi, err)
	}
}

// REMOTE CD: ".." steps up inside the tree and no further; no argument
// goes to the top.
func TestChdirDotDot(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "a", "b"), 0o755)
	d, _ := filestore.Open(root)
	defer d.Close()
	steps := []struct {
		arg, pwd string
		ok       bool
	}{
		{"a/b", "/a/b", true},
		{"..", "/a", true},
		{"b/..", "/a", true},
		{"../..", "/a", false},
		{"..", "/", true},
		{"..", "/", false},
		{"/a/b/../b", "/a/b", true},
		{"", "/", true},
		{"/..", "/", false},
		{"a/../../x", "/", false},
	}
	for _, st := range steps {
		err := d.Chdir(st.arg)
		if (err == nil) != st.ok || d.Pwd() != st.pwd {
			t.Errorf("cd %q: err %v, pwd %q; want ok=%v, pwd %q", st.arg, err, d.Pwd(), st.ok, st.pwd)
		}
	}
}

// Room refuses what the file system cannot hold and takes what it can.
func TestRoom(t *testing.T) {
	d := openTree(t, t.TempDir())
	in, err := d.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Abort(false)
	rc, ok := in.(kermit.RoomChecker)
	if !ok {
		t.Fatal("a filestore file is no RoomChecker")
	}
	if err := rc.Room(1 << 10); err != nil {
		t.Errorf("Room(1 KiB): %v", err)
	}
	if err := rc.Room(1 << 62); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Room(4 EiB): %v; want ENOSPC", err)
	}
}

// A name ending in "/" (a classic peer's as-name "dir/") names no file:
// refused, not stored as the file "dir".
func TestCreateRefusesDirectoryName(t *testing.T) {
	root := t.TempDir()
	d := openTree(t, root)
	if _, err := d.Create("dir/"); err == nil {
		t.Fatal("Create(dir/) succeeded")
	}
	if _, err := os.Lstat(filepath.Join(root, "dir")); err == nil {
		t.Error("dir made")
	}
	// "." and ".." name directories too: refused at once, not once the
	// data has come (QA: a raw F named "." was acknowledged).
	os.Mkdir(filepath.Join(root, "sub"), 0o755)
	d.UnnamedMax = filestore.NetUnnamedMax // as a server's (unnamed.go)
	for _, name := range []string{".", "..", "sub/.", "sub/..", "./."} {
		if in, err := d.Create(name); err == nil || !strings.Contains(err.Error(), "names a directory") && !strings.Contains(err.Error(), "..") {
			if in != nil {
				in.Abort(false)
			}
			t.Errorf("Create(%q): %v; want refused as a directory", name, err)
		}
	}
}

// Making a directory where a file is says which name is the file, not
// only "file exists".
func TestMkdirOverFileNamesIt(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644)
	d, _ := filestore.Open(root)
	defer d.Close()
	for _, name := range []string{"f", "f/sub", "f/sub/deeper"} {
		err := d.Mkdir(name)
		if err == nil || !strings.Contains(err.Error(), "f exists and is not a directory") {
			t.Errorf("Mkdir(%q) = %v, want it to name f as not a directory", name, err)
		}
	}
	// So does a file created under it (QA: "mkdirat f: file exists").
	for _, name := range []string{"f/x", "f/sub/x"} {
		in, err := d.Create(name)
		if err == nil {
			in.Abort(false)
		}
		if err == nil || !strings.Contains(err.Error(), "f exists and is not a directory") {
			t.Errorf("Create(%q) = %v, want it to name f as not a directory", name, err)
		}
		if err != nil && strings.Count(err.Error(), "filestore:") > 1 {
			t.Errorf("Create(%q) = %v: the package named twice (QA)", name, err)
		}
	}
}

// KeepExisting changes the mode of the file under the final name, in
// place, and so leaves alone a file other names link to (one planted in
// the tree could be a file outside it). (A symbolic link under the name
// never gets that far: Create refuses it.)
func TestKeepExistingMode(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	keep := func(name string, perm os.FileMode) error {
		inc, err := d.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		defer inc.Abort(false)
		return inc.(interface{ KeepExisting(fs.FileMode) error }).KeepExisting(perm)
	}
	os.WriteFile(filepath.Join(root, "a"), []byte("x"), 0o644)
	if err := keep("a", 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "a")); fi.Mode().Perm() != 0o600 {
		t.Errorf("a is %v, want 0600", fi.Mode())
	}
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("s"), 0o600)
	if err := os.Link(secret, filepath.Join(root, "hard")); err != nil {
		t.Skip(err)
	}
	if err := keep("hard", 0o644); err == nil {
		t.Error("KeepExisting changed a file with another link")
	}
	if fi, _ := os.Stat(secret); fi.Mode().Perm() != 0o600 {
		t.Errorf("the linked file outside the tree is now %v", fi.Mode())
	}
}

// With UniqueNames, a directory of the name of a file received in the
// same transfer is refused, not made where the file is to be renamed
// (get -r host/a/x host/b/x, one a file and the other a directory).
func TestUniqueNamesFileThenDirectory(t *testing.T) {
	dir := t.TempDir()
	d, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.UniqueNames = true
	d.BeginBatch()
	in, err := d.Create("x")
	if err != nil {
		t.Fatal(err)
	}
	in.WriteAt([]byte("file"), 0)
	if err := in.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.MakeDir("x", 0o755, true); err == nil {
		t.Error("MakeDir(x) after the file x: no error")
	}
	if _, err := d.Create("x/in/z"); err == nil {
		t.Error("Create(x/in/z) after the file x: no error")
	}
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "x")); err != nil || string(b) != "file" {
		t.Errorf("x = %q, %v; want the file", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".x"+filestore.PartSuffix)); !os.IsNotExist(err) {
		t.Errorf("a partial is left: %v", err)
	}
}

// A name under a symbolic link that leads out of the tree is refused in
// words that say so, for files and directories alike (QA: os.Root's
// "mkdirat odd: statat odd: path escapes from parent", once per file).
func TestLinkLeadingOutRefusedClearly(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "odd")); err != nil {
		t.Fatal(err)
	}
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, cerr := d.Create("odd/f1")
	for what, err := range map[string]error{
		"Create":     cerr,
		"MakeDir":    d.MakeDir("odd/sub", 0o755, true),
		"ReceiveDir": d.ReceiveDir("odd/sub2"),
	} {
		if !errors.Is(err, filestore.ErrLeadsOutside) || !strings.Contains(err.Error(), "odd") || strings.Contains(err.Error(), "escapes from parent") {
			t.Errorf("%s under a link leading out: %v; want ErrLeadsOutside naming the path", what, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the tree: %v", entries)
	}
}

// A file no transfer would store under its name (a control character,
// a backslash) that is there all the same can be removed by its name
// and renamed to one a transfer takes, never the other way (QA: only a
// wildcard reached it, and nothing renamed it).
func TestUnsafeNamesRemovedAndRenamed(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"nl\nname", "back\\slash", "esc\x1b[31m", "d\x01ir/f"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, n)), 0o755)
		os.WriteFile(filepath.Join(root, n), []byte("x"), 0o644)
	}
	d, _ := filestore.Open(root)
	defer d.Close()
	if err := d.Remove("back\\slash"); err != nil {
		t.Errorf("Remove(back\\slash): %v", err)
	}
	if err := d.RemoveLiteral("esc\x1b[31m"); err != nil {
		t.Errorf("RemoveLiteral(esc...): %v", err)
	}
	if err := d.Remove("d\x01ir/f"); err != nil {
		t.Errorf("Remove(d\\x01ir/f): %v", err)
	}
	if err := d.Rmdir("d\x01ir"); err != nil {
		t.Errorf("Rmdir(d\\x01ir): %v", err)
	}
	if err := d.Rename("nl\nname", "fixed"); err != nil {
		t.Errorf("Rename(nl\\nname, fixed): %v", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 || ents[0].Name() != "fixed" {
		t.Errorf("left %v, want only fixed", ents)
	}
	for _, err := range []error{d.Rename("fixed", "bad\nname"), d.Mkdir("x\\y")} {
		if !errors.Is(err, filestore.ErrUnsafeName) {
			t.Errorf("a name a transfer would not store was made: %v", err)
		}
	}
}

// The room files are promised is the file system's, shared by every
// session (Dir) receiving there: of two files that together do not fit,
// the second is refused at once, whichever session has it, and gets the
// room once the first is given up or written. (QA: three concurrent
// uploads that together did not fit were all admitted, and all failed
// with the disk full.)
func TestRoomSharedAcrossSessions(t *testing.T) {
	dir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free <= 0 || free > 1<<50 {
		t.Fatalf("free space %d: cannot test against it", free)
	}
	big := free / 10 * 6 // two do not fit
	room := func(d *filestore.Dir, name string) (kermit.Incoming, error) {
		t.Helper()
		in, err := d.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		return in, in.(kermit.RoomChecker).Room(big)
	}
	a, b := openTree(t, dir), openTree(t, dir)
	first, err := room(a, "sub1/first")
	if err != nil {
		t.Fatalf("Room(%d) of %d free: %v", big, free, err)
	}
	second, err := room(b, "sub2/second")
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a second session's Room(%d) beside a first's, %d free: %v; want ENOSPC", big, free, err)
	}
	// Said with what is held for the first: df shows more free than
	// the refusal's figure (QA ar F5).
	if want := fmt.Sprintf("beside the %d held for files being received now", big); !strings.Contains(err.Error(), want) {
		t.Errorf("refusal %q does not say %q", err, want)
	}
	second.Abort(false)
	first.Abort(false) // its promise given back
	second, err = room(b, "sub2/second")
	if err != nil {
		t.Errorf("Room(%d) once the first is given up: %v", big, err)
	}
	second.Abort(false)
}

// A flat store (a get without -r) keeps the last "/" element of a name
// and no more: a backslash is part of a Unix name, not a separator, so
// a server's a\b is refused as unsafe, not stored as b, which may be
// another file of the same get (QA r: the server's real b was refused
// and the local b replaced by a\b's bytes).
func TestFlatStoreSplitsOnlyOnSlash(t *testing.T) {
	dir := t.TempDir()
	d, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.Flat = true
	for _, n := range []string{"a\\b", "\\etc\\passwd", "sub\\file", "c\\", "x/y\\z"} {
		if in, err := d.Create(n); !errors.Is(err, filestore.ErrUnsafeName) {
			if err == nil {
				in.Abort(false)
			}
			t.Errorf("Create(%q): %v; want ErrUnsafeName", n, err)
		}
	}
	in, err := d.Create("deep/er/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	in.WriteAt([]byte("flat"), 0)
	if err := in.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "f.txt" {
		t.Fatalf("stored %v, want only f.txt", ents)
	}
}
