package filestore_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

func makeTree(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, filepath.FromSlash(n))
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// openTree opens the tree at root, closed when t ends.
func openTree(t *testing.T, root string) *filestore.Dir {
	t.Helper()
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// fileNames names the files and the empty directories of files, sorted:
// the directories with files in them, which a recursive match also
// lists (kermit.OutgoingFile.Filled), are left out.
func fileNames(files []kermit.OutgoingFile) []string {
	var out []string
	for _, f := range files {
		if !f.Filled {
			out = append(out, f.Name)
		}
	}
	slices.Sort(out)
	return out
}

// outcomes says of each entry of a match whether it would be sent
// ("file"), is passed over ("passed over: why") or would fail ("failed"),
// by opening it.
func outcomes(t *testing.T, files []kermit.OutgoingFile) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range files {
		if f.Dir {
			out[f.Name] = "directory"
			continue
		}
		r, err := f.Open()
		switch {
		case err == nil:
			r.Close()
			out[f.Name] = "file"
		case errors.Is(err, kermit.ErrPassedOver):
			out[f.Name] = "passed over: " + err.Error()
		default:
			out[f.Name] = "failed"
		}
	}
	return out
}

// sentNames names the entries of a match that would be sent as files.
func sentNames(t *testing.T, files []kermit.OutgoingFile) []string {
	var out []string
	for n, o := range outcomes(t, files) {
		if o == "file" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// A wildcard that also matches a directory gets the files; the directory
// is passed over without recursion, and said to be (it went unmentioned:
// QA), walked with it (an empty one given as a directory entry), and DIR
// of the pattern lists it.
func TestMatchWildcardSkipsDirectories(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "wc/a.txt", "wc/b.txt", "wc/sub/c.txt", "wc/empty/")
	d, _ := filestore.Open(root)
	defer d.Close()

	files, err := d.Match("wc/*", false)
	if got, want := sentNames(t, files), []string{"a.txt", "b.txt"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Match(wc/*) = %q, %v; want %q", got, err, want)
	}
	o := outcomes(t, files)
	for _, n := range []string{"sub", "empty"} {
		if !strings.Contains(o[n], "passed over") || !strings.Contains(o[n], "a directory (not copied without -r)") {
			t.Errorf("Match(wc/*): %s is %q; want passed over as a directory", n, o[n])
		}
	}
	files, err = d.Match("wc/*", true)
	if got, want := fileNames(files), []string{"a.txt", "b.txt", "empty", "sub/c.txt"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Match(wc/*, recursive) = %q, %v; want %q", got, err, want)
	}
	for _, f := range files {
		if f.Dir != (f.Name == "empty" || f.Name == "sub") || f.Filled != (f.Name == "sub") {
			t.Errorf("%s: Dir = %v, Filled = %v (the directories are; only sub has files)", f.Name, f.Dir, f.Filled)
		}
	}
	if _, err := d.Match("wc/sub", false); err == nil {
		t.Error("a directory named literally matched without recursion")
	}
	l, err := d.List("wc/*")
	if err != nil || !strings.Contains(l, " sub/\n") || !strings.Contains(l, " a.txt\n") {
		t.Errorf("List(wc/*) = %q, %v; want the files and sub/", l, err)
	}
}

// During a recursive match an unreadable directory, or a file whose
// details cannot be read, does not end the match: the readable files
// are there, and each unreadable entry is a file whose Open fails with
// the reason, so the sending engine reports it failed and goes on.
func TestMatchRecursiveUnreadable(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "d/a.txt", "d/noperm/secret", "d/nosearch/hidden", "d/z/last.txt")
	for _, dir := range []struct {
		name string
		mode os.FileMode
	}{{"d/noperm", 0}, {"d/nosearch", 0o644}} { // no access; listable but no search
		p := filepath.Join(root, dir.name)
		if err := os.Chmod(p, dir.mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(p, 0o755) })
	}
	d, _ := filestore.Open(root)
	defer d.Close()

	var files, top []kermit.OutgoingFile
	var err, topErr error
	var probe error
	unprivileged(t, func() {
		_, probe = os.ReadDir(filepath.Join(root, "d", "noperm"))
		files, err = d.Match("d", true)
		top, topErr = d.Match("d/noperm", true)
	})
	if probe == nil {
		t.Skip("permissions are not enforced here")
	}
	if err != nil {
		t.Fatalf("Match(d, recursive): %v", err)
	}
	// The directory without search permission fails as a whole or by its
	// file, as the platform's directory reading has it.
	var opened, failed []string
	for _, f := range files {
		if f.Dir {
			continue
		}
		r, err := f.Open()
		if err != nil {
			if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), f.Name) {
				t.Errorf("Open(%s) = %v; want a permission error naming it", f.Name, err)
			}
			failed = append(failed, strings.Replace(f.Name, "nosearch/hidden", "nosearch", 1))
			continue
		}
		r.Close()
		opened = append(opened, f.Name)
	}
	if want := []string{"d/a.txt", "d/z/last.txt"}; !slices.Equal(opened, want) {
		t.Errorf("readable files %q, want %q", opened, want)
	}
	if want := []string{"d/noperm", "d/nosearch"}; !slices.Equal(failed, want) {
		t.Errorf("failing entries %q, want %q", failed, want)
	}
	// The unreadable directory named itself: one failing file, no error
	// for the whole GET.
	if got := fileNames(top); topErr != nil || !slices.Equal(got, []string{"noperm"}) {
		t.Errorf("Match(d/noperm, recursive) = %q, %v", got, topErr)
	}
}

// linkTree makes a tree t/ holding real.txt, dir/x.txt and links to them
// (tofile, todir) and to a file outside the tree (out), and returns its
// root.
func linkTree(t *testing.T) string {
	root, outside := t.TempDir(), t.TempDir()
	makeTree(t, root, "t/real.txt", "t/dir/x.txt")
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	os.Symlink("real.txt", filepath.Join(root, "t/tofile"))
	os.Symlink("dir", filepath.Join(root, "t/todir"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "t/out"))
	return root
}

// A recursive match follows a link to a file in the tree, as the sending
// client does; a dangling link or one leading out of the tree becomes an
// entry whose Open fails (so the client hears of it); a FIFO and a link
// to a directory are passed over: entries whose Open says so
// (kermit.ErrPassedOver), for the client to hear of them as skipped.
func TestMatchRecursiveLinks(t *testing.T) {
	root := linkTree(t)
	os.Symlink("missing", filepath.Join(root, "t/dangling"))
	// Loops are named as not sent, as dangling links are (QA: passed
	// over without a word, taken for links to partials).
	os.Symlink("loop2", filepath.Join(root, "t/loop1"))
	os.Symlink("loop1", filepath.Join(root, "t/loop2"))
	os.Symlink("self", filepath.Join(root, "t/self"))
	if err := syscall.Mkfifo(filepath.Join(root, "t/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, _ := filestore.Open(root)
	defer d.Close()
	files, err := d.Match("t", true)
	if got, want := fileNames(files), []string{"t/dangling", "t/dir/x.txt", "t/fifo", "t/loop1", "t/loop2", "t/out", "t/real.txt", "t/self", "t/todir", "t/tofile"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("Match(t, recursive) = %q, %v; want %q", got, err, want)
	}
	for _, f := range files {
		if f.Dir {
			continue
		}
		r, err := f.Open()
		switch f.Name {
		case "t/dangling", "t/out", "t/loop1", "t/loop2", "t/self":
			if err == nil || errors.Is(err, kermit.ErrPassedOver) {
				if r != nil {
					r.Close()
				}
				t.Errorf("%s: opened, or passed over: %v", f.Name, err)
			}
		case "t/fifo", "t/todir":
			if !errors.Is(err, kermit.ErrPassedOver) {
				t.Errorf("%s: %v; want passed over", f.Name, err)
			}
		default:
			if err != nil {
				t.Errorf("%s: %v", f.Name, err)
				continue
			}
			b := make([]byte, 64)
			n, _ := r.Read(b)
			r.Close()
			if f.Name == "t/tofile" && string(b[:n]) != "t/real.txt" {
				t.Errorf("tofile read %q, want real.txt's content", b[:n])
			}
		}
	}
}

// A link to a file in the tree is sent when named, and when a wildcard
// finds it, as a recursive match sends it; a link leading out of the
// tree or to a directory is not.
func TestMatchLinkByNameAndPattern(t *testing.T) {
	root := linkTree(t)
	os.WriteFile(filepath.Join(root, "t/.p.kerf-part"), []byte("partial"), 0o644)
	os.Symlink(".p.kerf-part", filepath.Join(root, "t/topart"))
	if err := syscall.Mkfifo(filepath.Join(root, "t/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := openTree(t, root)
	if files, err := d.Match("t/topart", false); err == nil || !strings.Contains(err.Error(), "a link to a partial file") {
		// (Not "not a regular file (a symbolic link)": QA af.)
		t.Errorf("a link to a partial file matched: %q, %v; want it refused as a link to a partial", fileNames(files), err)
	}
	if files, err := d.Match("t", true); err != nil || slices.Contains(fileNames(files), "t/topart") {
		t.Errorf("a walk served a link to a partial file: %q, %v", fileNames(files), err)
	}
	files, err := d.Match("t/tofile", false)
	if err != nil || len(files) != 1 || files[0].Name != "tofile" || files[0].Size != int64(len("t/real.txt")) {
		t.Fatalf("Match(t/tofile) = %+v, %v", files, err)
	}
	r, err := files[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64)
	n, _ := r.Read(b)
	r.Close()
	if string(b[:n]) != "t/real.txt" {
		t.Errorf("tofile read %q, want real.txt's content", b[:n])
	}
	files, err = d.Match("t/*", false)
	if err != nil || !slices.Equal(sentNames(t, files), []string{"real.txt", "tofile"}) {
		t.Errorf("Match(t/*) = %q, %v; want real.txt and tofile", sentNames(t, files), err)
	}
	// What else it finds is named, as a walk names it: a link to a
	// partial not at all.
	o := outcomes(t, files)
	for n, want := range map[string]string{"dir": "passed over", "todir": "a link to a directory", "fifo": "a named pipe", "out": "failed", "topart": ""} {
		if got := o[n]; want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("Match(t/*): %s is %q; want %q", n, got, want)
		}
	}
	for _, name := range []string{"t/out", "t/todir"} {
		if files, err := d.Match(name, false); err == nil {
			t.Errorf("Match(%s) = %q, want an error", name, fileNames(files))
		}
	}
}

// dirLinkTree makes rdir/f, rdir/sub/g, a link l_dir to rdir and a link
// out to /etc, and opens the tree.
func dirLinkTree(t *testing.T) *filestore.Dir {
	t.Helper()
	dir := t.TempDir()
	makeTree(t, dir, "rdir/f", "rdir/sub/g")
	for link, to := range map[string]string{"l_dir": "rdir", "out": "/etc"} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	d := openTree(t, dir)
	return d
}

// "link/" lists the directory a symlink leads to (inside the tree), as
// ls(1) does; "link" lists the link.
func TestListThroughDirLink(t *testing.T) {
	d := dirLinkTree(t)
	if l, err := d.List("l_dir/"); err != nil || !strings.Contains(l, " f\n") || !strings.HasSuffix(l, " sub/\n") || strings.Count(l, "\n") != 2 {
		t.Errorf("List(l_dir/) = %q, %v; want the directory's file and subdirectory", l, err)
	}
	if l, err := d.List("l_dir"); err != nil || !strings.HasPrefix(l, "l") || !strings.HasSuffix(l, " l_dir\n") {
		t.Errorf("List(l_dir) = %q, %v; want the link", l, err)
	}
	if l, err := d.List("out/"); err != nil || !strings.HasSuffix(l, " out\n") || strings.Count(l, "\n") != 1 {
		t.Errorf("List(out/) = %q, %v; want only the link, never what is outside the tree", l, err)
	}
}

// GET of "link/" with V sends the tree of the directory the link leads
// to (inside the tree), named under the link's name, and so does "link"
// named plainly (as send -r follows a local link given it).
func TestMatchThroughDirLink(t *testing.T) {
	d := dirLinkTree(t)
	for _, spec := range []string{"l_dir/", "l_dir"} {
		files, err := d.Match(spec, true)
		if got, want := fileNames(files), []string{"l_dir/f", "l_dir/sub/g"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("Match(%s, recursive) = %q, %v; want %q", spec, got, err, want)
		}
	}
	if files, err := d.Match("out", true); err == nil && len(files) > 0 {
		t.Errorf("Match(out) left the tree: %q", fileNames(files))
	}
	if files, err := d.Match("out/", true); err == nil && len(files) > 0 {
		t.Errorf("Match(out/) left the tree: %q", fileNames(files))
	}
}

// Remove takes a pattern as C-Kermit's REMOTE DELETE does: the regular
// files it matches (never directories, never partial files), unless a
// file has that very name; a pattern that matches nothing is an error.
func TestRemovePattern(t *testing.T) {
	dir := t.TempDir()
	makeTree(t, dir, "a.bin", "b.bin", "keep.txt", "lit*.bin", "sub.bin/x", ".c.bin.kerf-part")
	d := openTree(t, dir)
	if err := d.Remove("lit*.bin"); err != nil {
		t.Fatalf("Remove(lit*.bin) = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.bin")); err != nil {
		t.Fatal("a literal name with a star removed other files")
	}
	if err := d.Remove("*.bin"); err != nil {
		t.Fatalf("Remove(*.bin) = %v", err)
	}
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := []string{".c.bin.kerf-part", "keep.txt", "sub.bin"}; !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
	if err := d.Remove("*.none"); err == nil {
		t.Error("a pattern matching nothing removed nothing without an error")
	}
	if err := d.Remove(".c*"); err == nil {
		t.Error("a pattern only a partial file matches removed something")
	}
	if _, err := os.Stat(filepath.Join(dir, ".c.bin.kerf-part")); err != nil {
		t.Error("a pattern removed a partial file")
	}
	if err := d.Remove("keep.txt/"); err == nil {
		t.Error("Remove(keep.txt/) removed the file, as if the slash were not there")
	}
	// Only a directory and a link match: said so, not "no files match"
	// (QA x), and both stay.
	os.Symlink("keep.txt", filepath.Join(dir, "sub.lnk"))
	if err := d.Remove("sub.*"); err == nil || !strings.Contains(err.Error(), "only 2 other entries") {
		t.Errorf("Remove(sub.*) of a directory and a link: %v; want it to say what it matched", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub.lnk")); err != nil {
		t.Error("a pattern removed a link")
	}
}

// SetDirAttrs changes a directory in the tree and nothing else: not the
// tree's top or the current directory ("."), not what a symbolic link
// leads to, not a file; a read-only Dir refuses.
func TestSetDirAttrs(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "a/f", "b/")
	os.Symlink("b", filepath.Join(root, "lb"))
	d := openTree(t, root)
	when := time.Date(2019, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := d.SetDirAttrs("a", 0o700, true, when); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "a")); fi.Mode().Perm() != 0o700 || !fi.ModTime().Equal(when) {
		t.Errorf("a: %v %v; want 0700 %v", fi.Mode().Perm(), fi.ModTime(), when)
	}
	before, _ := os.Stat(root)
	for _, name := range []string{".", "./", "a/.."} {
		if err := d.SetDirAttrs(name, 0o700, true, when); err != nil {
			t.Errorf("SetDirAttrs(%q): %v", name, err)
		}
	}
	if fi, _ := os.Stat(root); fi.Mode() != before.Mode() || !fi.ModTime().Equal(before.ModTime()) {
		t.Errorf("the tree's top changed: %v %v", fi.Mode(), fi.ModTime())
	}
	if err := d.SetDirAttrs("lb", 0o700, true, when); err == nil {
		t.Error("SetDirAttrs followed a symbolic link")
	}
	if fi, _ := os.Stat(filepath.Join(root, "b")); fi.Mode().Perm() != 0o755 {
		t.Errorf("b, behind the link: %v", fi.Mode().Perm())
	}
	if err := d.SetDirAttrs("a/f", 0o700, true, when); err == nil {
		t.Error("SetDirAttrs changed a file")
	}
	if err := d.SetDirAttrs("../x", 0o700, true, when); err == nil {
		t.Error("SetDirAttrs went above the tree")
	}
	// MakeDir keeps the owner's access while the group arrives.
	if err := d.MakeDir("c/d", 0o500, true); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "c/d")); fi.Mode().Perm()&0o700 != 0o700 || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("MakeDir(c/d, 0500): %v; want owner rwx and no more than the 0500 asked for others", fi.Mode().Perm())
	}
	d.ReadOnly = true
	if err := d.SetDirAttrs("b", 0o700, true, when); err == nil {
		t.Error("a read-only Dir set attributes")
	}
}

// Rmdir removes an empty directory and nothing else: not a file, not a
// symbolic link (to a directory or not), not a directory with something
// in it.
func TestRmdirOnlyDirectories(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "plain.txt", "empty/", "full/f")
	os.Symlink("empty", filepath.Join(root, "dirlink"))
	os.Symlink("plain.txt", filepath.Join(root, "filelink"))
	d := openTree(t, root)
	for _, name := range []string{"plain.txt", "dirlink", "filelink", "full"} {
		if err := d.Rmdir(name); err == nil {
			t.Errorf("Rmdir(%s) succeeded", name)
		}
		if _, err := os.Lstat(filepath.Join(root, name)); err != nil {
			t.Errorf("%s after a refused Rmdir: %v", name, err)
		}
	}
	// "empty/." is not a name for empty, as rmdir(1) says (QA: it
	// removed it).
	for _, name := range []string{"empty/.", "empty/./", "empty/sub/..", "."} {
		if err := d.Rmdir(name); err == nil {
			t.Errorf("Rmdir(%s) succeeded", name)
		}
	}
	if err := d.Rmdir("empty"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "empty")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty after Rmdir: %v", err)
	}
}

// A wildcard matches a name with a leading dot only if it has one too,
// as shells and C-Kermit match: GET * must not bring .netrc along.
func TestWildcardSkipsDotFiles(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "a.txt", ".netrc", ".hidden.txt", "sub/.x")
	d := openTree(t, root)
	for _, c := range []struct {
		spec string
		want []string
	}{
		{"*", []string{"a.txt"}},
		{"*.txt", []string{"a.txt"}},
		{".*", []string{".hidden.txt", ".netrc"}},
		{".net?c", []string{".netrc"}},
		{"sub/*", nil},
	} {
		files, _ := d.Match(c.spec, false)
		if got := sentNames(t, files); !slices.Equal(got, c.want) {
			t.Errorf("Match(%q) = %q; want %q", c.spec, got, c.want)
		}
	}
	// Named, a dot file is sent as any other.
	if files, err := d.Match(".netrc", false); err != nil || len(files) != 1 {
		t.Errorf("Match(.netrc) = %d files, %v", len(files), err)
	}
}

// A directory an earlier transfer left read-only, as its sender has it,
// takes the next group's files (MakeDir gives its owner rwx until
// SetDirAttrs), checked with a non-root server's permissions; and
// SetDirAttrs keeps the receiver's setgid and sticky bits.
func TestDirAttrsOnExistingDirectories(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "ro/", "shared/")
	os.Chmod(filepath.Join(root, "ro"), 0o555)
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "ro"), 0o755) })
	os.Chmod(filepath.Join(root, "shared"), 0o775|os.ModeSetgid)
	d := openTree(t, root)
	var errs []error
	unprivileged(t, func() {
		errs = append(errs, d.MakeDir("ro", 0o555, true))
		in, err := d.Create("ro/f")
		errs = append(errs, err)
		if err == nil {
			in.WriteAt([]byte("f"), 0)
			errs = append(errs, in.Commit(time.Time{}, 0o644))
		}
		errs = append(errs, d.SetDirAttrs("ro", 0o555, true, time.Time{}))
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("receiving into a read-only directory: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "ro")); fi.Mode().Perm() != 0o555 {
		t.Errorf("ro after the group: %v; want 0555 again", fi.Mode().Perm())
	}
	if b, err := os.ReadFile(filepath.Join(root, "ro/f")); err != nil || string(b) != "f" {
		t.Errorf("ro/f = %q, %v", b, err)
	}
	if err := d.SetDirAttrs("shared", 0o750, true, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "shared")); fi.Mode().Perm() != 0o750 || fi.Mode()&os.ModeSetgid == 0 {
		t.Errorf("shared: %v; want 0750 with its setgid bit", fi.Mode())
	}
}

// Times after 2262, beyond what nanoseconds since 1970 hold in an
// int64, are kept for files and directories: they came out as garbage
// (2300 became 1715) through UnixNano. (Past 2446 ext4 clamps, and
// before 1901 so do others: not tried.)
func TestFarTimesKept(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "d/")
	d := openTree(t, root)
	for _, when := range []time.Time{
		time.Date(2300, 6, 1, 12, 0, 0, 0, time.UTC),
		time.Date(2400, 12, 31, 23, 59, 59, 0, time.UTC),
	} {
		in, err := d.Create("f")
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Commit(when, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := d.EndBatch(); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(root, "f")); err != nil || !fi.ModTime().Equal(when) {
			t.Errorf("file committed with %v has %v (%v)", when, fi.ModTime(), err)
		}
		if err := d.SetDirAttrs("d", 0o755, true, when); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(filepath.Join(root, "d")); !fi.ModTime().Equal(when) {
			t.Errorf("directory given %v has %v", when, fi.ModTime())
		}
	}
}

// Names that are not UTF-8 (a tree written by a Latin-1 system) are
// walked and listed like any other: os.Root.FS refused such a path, so
// a directory named so was sent as an unreadable file and its files
// were lost.
func TestWalkNamesNotUTF8(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "t/d\xff/in", "t/ok/f\xfe", "t/z")
	d := openTree(t, root)
	files, err := d.Match("t", true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		if f.Size < 0 {
			t.Errorf("%q reported unreadable", f.Name)
		}
		got = append(got, f.Name)
	}
	want := []string{"t", "t/d\xff", "t/d\xff/in", "t/ok", "t/ok/f\xfe", "t/z"}
	if !slices.Equal(got, want) {
		t.Fatalf("walk gave %q, want %q", got, want)
	}
	list, err := d.List("t/d\xff")
	if err != nil || !strings.Contains(list, "in") {
		t.Fatalf("List: %q, %v", list, err)
	}
}

// Rename moves into an existing directory, as mv does, and refuses with
// words what cannot be done: a directory into itself, a name onto
// itself, onto a directory that is not empty.
func TestRenameLikeMv(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "f", "g", "d1/", "e1/e2/", "full/x/y", "x/")
	d := openTree(t, root)
	if err := d.Rename("f", "d1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "d1/f")); err != nil {
		t.Errorf("f did not go into d1: %v", err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"e1", "e1/e2/e3", "into itself"},
		{"e1", "e1", "already there"},
		{"x", "full", "not empty"},
		{".", "y", "current directory"},
	} {
		if err := d.Rename(tc.from, tc.to); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Rename(%s, %s): %v, want an error saying %q", tc.from, tc.to, err, tc.want)
		}
	}
	// A file onto a file replaces it, as rename(2) does.
	if err := d.Rename("g", "d1/f"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "d1/f")); string(b) != "g" {
		t.Errorf("d1/f holds %q after g was renamed onto it", b)
	}

	// A directory takes the place of an empty one, as rename(2) lets it
	// (os.Root's refuses any directory there).
	makeTree(t, root, "e3/inside", "d2/e3/")
	if err := d.Rename("e3", "d2"); err != nil {
		t.Errorf("Rename(e3, d2) with d2/e3 empty: %v", err)
	} else if _, err := os.Stat(filepath.Join(root, "d2/e3/inside")); err != nil {
		t.Errorf("e3 did not take the empty d2/e3's place: %v", err)
	}
	makeTree(t, root, "h", "d3/h/", "d4/", "d5/d4", "k")
	for _, tc := range []struct{ from, to, want string }{
		{"k", "nodir/", "not a directory"}, // mv's "to/": a file is not renamed to a mistyped directory
		{"k/", "k2", "not a directory"},    // "from/" names a directory, never the file (QA)
		{"h", "d3", "a directory is there"},
		{"d4", "d5", "a file is there"},
	} {
		if err := d.Rename(tc.from, tc.to); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Rename(%s, %s): %v, want an error saying %q", tc.from, tc.to, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "k")); err != nil {
		t.Errorf("k moved: %v", err)
	}
	// A directory to "name/" is renamed, as mv does.
	if err := d.Rename("d4", "d6/"); err != nil {
		t.Errorf("Rename(d4, d6/): %v", err)
	}
	// Onto a link to a directory: into the directory, as mv does (QA:
	// the link was replaced); a link leading out refuses the move.
	makeTree(t, root, "m1", "m2", "inner/")
	os.Symlink("inner", filepath.Join(root, "inlink"))
	os.Symlink(t.TempDir(), filepath.Join(root, "outlink"))
	if err := d.Rename("m1", "inlink"); err != nil {
		t.Errorf("Rename(m1, inlink): %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "inner/m1")); err != nil {
		t.Errorf("m1 did not go into inner through the link: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "inlink")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("inlink is no longer the link: %v %v", fi, err)
	}
	if err := d.Rename("m2", "outlink"); err == nil {
		t.Error("Rename(m2, outlink) succeeded")
	}
	if fi, err := os.Lstat(filepath.Join(root, "outlink")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("outlink is no longer the link: %v %v", fi, err)
	}
}

// A partial left by a transfer that ran as another user, which this
// server may not open, is refused with words saying what to do (it was
// only "permission denied", every time).
func TestStalePartialOfAnotherUser(t *testing.T) {
	root := t.TempDir()
	part := filepath.Join(root, ".rp.kerf-part")
	if err := os.WriteFile(part, []byte("old"), 0o000); err != nil {
		t.Fatal(err)
	}
	d := openTree(t, root)
	unprivileged(t, func() {
		_, err := d.Create("rp")
		if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "its owner must remove it") || len(err.Error()) > 100 {
			t.Errorf("Create over a partial it may not open: %v", err)
		}
	})
}

// A request naming the same entries many times gets each once, and one
// of more wildcards than a request may have is refused: a GET of
// "* * * …" expanded every star (QA: 8 KB of them, 800 MB of server
// memory).
func TestSpecRepeatsAndLimits(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "p/a.txt", "p/b.txt", "p/c.log")
	d := openTree(t, root)
	files, err := d.Match(strings.Repeat("p/* p/*.txt p/a.txt ", 50), false)
	if got := fileNames(files); err != nil || !slices.Equal(got, []string{"a.txt", "b.txt", "c.log"}) {
		t.Errorf("Match of 150 names finding 3 files = %q, %v; want each once", got, err)
	}
	if _, err := d.Match(strings.Repeat("p/* ", 257), false); err == nil || !strings.Contains(err.Error(), "wildcards in one request") {
		t.Errorf("Match of 257 wildcards: %v; want refused", err)
	}
	if _, err := d.List(strings.Repeat("p/a.txt ", 4097)); err == nil || !strings.Contains(err.Error(), "names in one request") {
		t.Errorf("List of 4,097 names: %v; want refused", err)
	}
	if l, err := d.List(strings.Repeat("p/a.txt ", 100)); err != nil || strings.Count(l, "a.txt") != 1 {
		t.Errorf("List of one name 100 times = %q, %v; want it once", l, err)
	}
}

// An error of a request names paths in the tree, never where the tree
// is on the server (QA: "f1/*" of a file said the root's whole path).
func TestErrorsDoNotShowTheRoot(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "pub/f1")
	d := openTree(t, root)
	_, lerr := d.List("pub/f1/*")
	_, merr := d.Match("pub/f1/*", false)
	for _, err := range []error{lerr, merr} {
		if err == nil || strings.Contains(err.Error(), root) || !strings.Contains(err.Error(), "pub/f1") {
			t.Errorf("error of pub/f1/*: %v; want it to name pub/f1 and not %s", err, root)
		}
	}
}

// Names found by several names of a request come once, whichever name
// comes first, and a wildcard ending in "/" finds directories (and
// links to them) only, as a shell's does.
func TestSpecDuplicatesAndDirectoryWildcards(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "p/a.txt", "p/b.txt", "p/dir1/x", "p/dir2/y")
	if err := os.Symlink("dir1", filepath.Join(root, "p", "link")); err != nil {
		t.Fatal(err)
	}
	d := openTree(t, root)
	names := func(listing string) []string {
		var out []string
		for line := range strings.Lines(listing) {
			f := strings.Fields(line)
			out = append(out, f[0][:1]+" "+f[len(f)-1])
		}
		return out
	}
	for _, c := range []struct {
		spec string
		want []string
	}{
		{"p/a.txt p/*", []string{"- a.txt", "- b.txt", "d dir1/", "d dir2/", "l link"}},
		{"p/* p/a.txt p/b.*", []string{"- a.txt", "- b.txt", "d dir1/", "d dir2/", "l link"}},
		{"p/*/", []string{"d dir1/", "d dir2/", "d link/"}},
		{"p/dir*/ p/*", []string{"- a.txt", "- b.txt", "d dir1/", "d dir2/", "l link"}},
		{"p/*.txt/", nil},
	} {
		l, err := d.List(c.spec)
		if got := names(l); !slices.Equal(got, c.want) || (err != nil) != (c.want == nil) {
			t.Errorf("List(%q) = %q, %v; want %q", c.spec, got, err, c.want)
		}
	}
	files, err := d.Match("p/a.txt p/*.txt p/a.*", false)
	if got := fileNames(files); err != nil || !slices.Equal(got, []string{"a.txt", "b.txt"}) {
		t.Errorf("Match = %q, %v; want each once", got, err)
	}
}

// The review's and QA x's cases: a link to a directory found by "l*/"
// (as the directory) and then by its name is one entry; one directory
// named twice lists what it holds, as named once; "d*/." finds
// directories only and sends each under its own name (walked from
// within, two files "common" landed on one name); "f/." of a file f is
// no directory.
func TestSpecRepeatsOfLinksAndDirectories(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "p/a.txt", "p/dir1/x", "q/d1/common", "q/d2/common", "q/dfile")
	if err := os.Symlink("dir1", filepath.Join(root, "p", "ld")); err != nil {
		t.Fatal(err)
	}
	d := openTree(t, root)
	files, err := d.Match("p/l*/ p/ld", true)
	if got := fileNames(files); err != nil || !slices.Equal(got, []string{"ld/x"}) {
		t.Errorf("Match(p/l*/ p/ld) = %q, %v; want ld/x once", got, err)
	}
	if l, err := d.List("p/l*/ p/ld"); err != nil || strings.Count(l, " ld") != 1 {
		t.Errorf("List(p/l*/ p/ld) = %q, %v; want ld once", l, err)
	}
	if l, err := d.List("p/dir1 p/dir1"); err != nil || !strings.HasSuffix(l, " x\n") || strings.Count(l, "\n") != 1 {
		t.Errorf("List(p/dir1 p/dir1) = %q, %v; want what it holds", l, err)
	}
	files, err = d.Match("q/d*/.", true)
	if got := fileNames(files); err != nil || !slices.Equal(got, []string{"d1/common", "d2/common"}) {
		t.Errorf("Match(q/d*/.) = %q, %v; want each directory under its name", got, err)
	}
	files, err = d.Match("q/d1/.", true)
	if got := fileNames(files); err != nil || !slices.Equal(got, []string{"common"}) {
		t.Errorf("Match(q/d1/.) = %q, %v; want its contents from within", got, err)
	}
	if files, err := d.Match("q/dfile/.", false); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Match(q/dfile/.) = %q, %v; want not a directory", fileNames(files), err)
	}
}

// A name spelt as a directory's ("f/", "f/.", "f/..") deletes no file,
// as GET of it fetches none: rm(1) refuses "f/" and "f/." alike (the
// file f was deleted by "f/." before).
func TestRemoveOfADirectorySpellingTakesNoFile(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "f", "sub/g")
	d := openTree(t, root)
	for _, name := range []string{"f/", "f/.", "./f/.", "f/..", "sub/g/.", "/f/."} {
		err := d.Remove(name)
		if err == nil || !strings.Contains(err.Error(), "not a file") {
			t.Errorf("Remove(%q) = %v; want it refused as not a file", name, err)
		}
	}
	for _, f := range []string{"f", "sub/g"} {
		if _, err := os.Lstat(filepath.Join(root, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if err := d.Remove("sub/./g"); err != nil {
		t.Errorf("Remove(sub/./g) = %v", err)
	}
}
