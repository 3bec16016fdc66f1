package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A recursive send and get carry empty directories, as scp -r and rsync
// -r do: a tree's shape arrives, not only its files. A tree that is one
// empty directory arrives as that directory.
func TestEmptyDirectoriesTravel(t *testing.T) {
	root, src, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	tree := filepath.Join(src, "tree")
	for _, d := range []string{"tree/empty", "tree/a/deep/empty2", "tree/full", "lonely"} {
		os.MkdirAll(filepath.Join(src, d), 0o755)
	}
	os.WriteFile(filepath.Join(tree, "full", "f.txt"), []byte("f"), 0o644)
	mustRun(t, srv, src, nil, "send", "-r", tree, filepath.Join(src, "lonely"), target(srv.addr, "/up"))
	for _, d := range []string{"up/tree/empty", "up/tree/a/deep/empty2", "up/lonely"} {
		if fi, err := os.Stat(filepath.Join(root, d)); err != nil || !fi.IsDir() {
			t.Errorf("sent: %s not a directory on the server: %v", d, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "up/tree/full/f.txt")); err != nil || string(b) != "f" {
		t.Errorf("sent: f.txt = %q, %v", b, err)
	}
	mustRun(t, srv, back, nil, "get", "-r", target(srv.addr, "up"), back)
	for _, d := range []string{"up/tree/empty", "up/tree/a/deep/empty2", "up/lonely"} {
		if fi, err := os.Stat(filepath.Join(back, d)); err != nil || !fi.IsDir() {
			t.Errorf("fetched: %s not a directory: %v", d, err)
		}
	}
	os.MkdirAll(filepath.Join(root, "nothing"), 0o755)
	mustRun(t, srv, back, nil, "get", "-r", target(srv.addr, "nothing"), back)
	if fi, err := os.Stat(filepath.Join(back, "nothing")); err != nil || !fi.IsDir() {
		t.Errorf("get -r of an empty directory: %v", err)
	}
}

// An empty directory the receiver cannot make (a file has its name
// there) fails the send, exit 4, naming it with the receiver's reason;
// the rest of the tree still arrives.
func TestEmptyDirectoryNotMadeIsReportedToSender(t *testing.T) {
	root, src := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	os.MkdirAll(filepath.Join(src, "tree", "blocked"), 0o755)
	os.WriteFile(filepath.Join(src, "tree", "f.txt"), []byte("f"), 0o644)
	os.MkdirAll(filepath.Join(root, "tree"), 0o755)
	os.WriteFile(filepath.Join(root, "tree", "blocked"), []byte("a file"), 0o644)
	r := run(t, srv, src, nil, "send", "-r", "tree", srv.addr)
	if r.code != 4 || !strings.Contains(r.stderr, "blocked") || !strings.Contains(r.stderr, "not made by the receiver") {
		t.Fatalf("want exit 4 naming tree/blocked and the receiver's reason, got %s", r)
	}
	if b, err := os.ReadFile(filepath.Join(root, "tree", "f.txt")); err != nil || string(b) != "f" {
		t.Errorf("the tree's file: %q, %v", b, err)
	}
}

// Directories keep their permissions and modification times both ways,
// as rsync -a and scp -rp keep them: a private directory stays private,
// a read-only one stays read-only with its files in it, a sticky one
// (/tmp-like) stays sticky. Sending a
// directory's contents ("tree/.") leaves the target directory as it was.
func TestDirectoryAttributesTravel(t *testing.T) {
	root, src, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	when := time.Date(2021, 6, 7, 8, 9, 10, 0, time.UTC)
	dirs := []struct {
		name string
		mode os.FileMode
	}{{"tree", 0o750}, {"tree/private", 0o700}, {"tree/ro", 0o555}, {"tree/empty", 0o711}, {"tree/shared", 0o777 | os.ModeSticky}}
	for _, d := range dirs {
		os.MkdirAll(filepath.Join(src, d.name), 0o755)
		if d.name != "tree/empty" {
			os.WriteFile(filepath.Join(src, d.name, "f"), []byte(d.name), 0o644)
		}
	}
	// Modes and times last, from the deepest: making what is inside
	// changes a directory's time.
	for i := len(dirs) - 1; i >= 0; i-- {
		p := filepath.Join(src, dirs[i].name)
		os.Chmod(p, dirs[i].mode)
		os.Chtimes(p, when, when.Add(time.Duration(i)*time.Minute))
	}
	t.Cleanup(func() {
		for _, top := range []string{src, root, back} {
			os.Chmod(filepath.Join(top, "tree/ro"), 0o755)
			os.Chmod(filepath.Join(top, "up/tree/ro"), 0o755)
		}
	})
	check := func(side, top string) {
		t.Helper()
		for i, d := range dirs {
			fi, err := os.Stat(filepath.Join(top, d.name))
			if err != nil {
				t.Errorf("%s: %v", side, err)
				continue
			}
			mode := fi.Mode() & (os.ModePerm | os.ModeSticky) // /tmp-like: sticky too
			if want := when.Add(time.Duration(i) * time.Minute); mode != d.mode || !fi.ModTime().Equal(want) {
				t.Errorf("%s: %s has mode %v, time %v; want %v, %v", side, d.name, mode, fi.ModTime().UTC(), d.mode, want)
			}
		}
		if b, err := os.ReadFile(filepath.Join(top, "tree/ro/f")); err != nil || string(b) != "tree/ro" {
			t.Errorf("%s: tree/ro/f = %q, %v", side, b, err)
		}
	}
	mustRun(t, srv, src, nil, "send", "-r", "tree", srv.addr)
	check("sent", root)
	mustRun(t, srv, back, nil, "get", "-r", target(srv.addr, "tree"), back)
	check("fetched", back)

	os.MkdirAll(filepath.Join(root, "up"), 0o755)
	mustRun(t, srv, src, nil, "send", "-r", filepath.Join(src, "tree")+"/.", target(srv.addr, "up"))
	if fi, err := os.Stat(filepath.Join(root, "up")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the target of tree/. : %v, %v; want it left 0755", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(root, "up/private")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("up/private after tree/. : %v; want 0700", err)
	}
}
