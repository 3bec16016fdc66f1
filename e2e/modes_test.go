package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sendableModes are the modes the mode tests send: 000 too where the
// test runs as root, the only one who can read such a file to send it.
func sendableModes(t *testing.T) []os.FileMode {
	modes := []os.FileMode{0o000, 0o400, 0o640, 0o751, 0o777}
	if os.Geteuid() != 0 {
		t.Log("not root: mode 000 left out")
		modes = modes[1:]
	}
	return modes
}

// Permission bits survive a send and a get, 000 included (a file nobody
// may read is still sent by its owner's kerf and must not arrive 0644).
func TestModesSurvive(t *testing.T) {
	root, src, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	modes := sendableModes(t)
	var names []string
	for _, m := range modes {
		p := filepath.Join(src, fmt.Sprintf("m%03o", m))
		os.WriteFile(p, []byte(p), 0o600)
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
		names = append(names, p)
	}
	mustRun(t, srv, src, nil, "send", append(names, target(srv.addr, "/"))...)
	mustRun(t, srv, back, nil, "get", target(srv.addr, "m*"), back)
	for _, m := range modes {
		n := fmt.Sprintf("m%03o", m)
		for _, dir := range []string{root, back} {
			fi, err := os.Stat(filepath.Join(dir, n))
			if err != nil {
				t.Errorf("%s in %s: %v", n, dir, err)
			} else if fi.Mode().Perm() != m {
				t.Errorf("%s in %s: mode %v; want %v", n, dir, fi.Mode().Perm(), m)
			}
		}
	}
}

// A resume skips a file the receiver has whole, but a mode changed on
// the sender's side since still arrives (rsync -a does the same): a file
// made private at the source must not stay readable at the destination.
// Both directions.
func TestResumeSkipKeepsNewMode(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "tree", "key"), randomBytes(5000, 1))
	writeFile(t, filepath.Join(local, "tree", "other"), randomBytes(7000, 2))
	os.Chmod(filepath.Join(local, "tree", "key"), 0o644)
	mustRun(t, srv, local, nil, "send", "-r", "tree", srv.addr)
	os.Chmod(filepath.Join(local, "tree", "key"), 0o600)
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--resume", "-r", "tree", srv.addr)
	if n := len(eventsNamed(parseEvents(t, r.stdout), "file_skipped")); n != 2 {
		t.Fatalf("send --resume: %d files skipped, want both:\n%s", n, r.stdout)
	}
	if fi, err := os.Stat(filepath.Join(root, "tree", "key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("server's key after send --resume: %v %v, want mode 0600", fi.Mode(), err)
	}

	mustRun(t, srv, back, nil, "get", "-r", target(srv.addr, "tree"), ".")
	os.Chmod(filepath.Join(root, "tree", "other"), 0o640)
	r = mustRun(t, srv, back, []string{"--json"}, "get", "--resume", "-r", target(srv.addr, "tree"), ".")
	if n := len(eventsNamed(parseEvents(t, r.stdout), "file_skipped")); n != 2 {
		t.Fatalf("get --resume: %d files skipped, want both:\n%s", n, r.stdout)
	}
	if fi, err := os.Stat(filepath.Join(back, "tree", "other")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("fetched other after get --resume: %v %v, want mode 0640", fi.Mode(), err)
	}
}

// Where the file there has other names (hard links), its mode is not
// changed in place (that would change the other names' file too): the
// file is sent again and renamed over its name, as any replaced file
// is, so the new mode arrives and the other name keeps its own. (QA:
// `send --resume` said "already there", exit 0, and left mode 0644.)
// Both directions.
func TestResumeLinkedFileTakesNewMode(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	key := filepath.Join(local, "km", "f")
	writeFile(t, key, randomBytes(5000, 3))
	os.Chmod(key, 0o644)
	mustRun(t, srv, local, nil, "send", "-r", "km", srv.addr)
	if err := os.Link(filepath.Join(root, "km", "f"), filepath.Join(root, "km-other")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(key, 0o600)
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--resume", "-r", "km", srv.addr)
	if n := len(eventsNamed(parseEvents(t, r.stdout), "file_done")); n != 1 {
		t.Errorf("send --resume: %d files sent, want f again:\n%s", n, r.stdout)
	}
	if fi, err := os.Stat(filepath.Join(root, "km", "f")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("server's f after send --resume: %v %v, want mode 0600", fi.Mode(), err)
	}
	sameFile(t, key, filepath.Join(root, "km", "f"))
	if fi, err := os.Stat(filepath.Join(root, "km-other")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the other link after send --resume: %v %v, want its mode 0644 kept", fi.Mode(), err)
	}

	mustRun(t, srv, back, nil, "get", "-r", target(srv.addr, "km"), ".")
	if err := os.Link(filepath.Join(back, "km", "f"), filepath.Join(back, "km-other")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(root, "km", "f"), 0o640)
	r = mustRun(t, srv, back, []string{"--json"}, "get", "--resume", "-r", target(srv.addr, "km"), ".")
	if n := len(eventsNamed(parseEvents(t, r.stdout), "file_done")); n != 1 {
		t.Errorf("get --resume: %d files fetched, want f again:\n%s", n, r.stdout)
	}
	if fi, err := os.Stat(filepath.Join(back, "km", "f")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("fetched f after get --resume: %v %v, want mode 0640", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(back, "km-other")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the local other link after get --resume: %v %v, want its mode 0600 kept", fi.Mode(), err)
	}
}

// The files of a tree sent with no progress bar are not looked at by
// the walk (their opens find size, times and mode: kermit
// OutgoingFile.StatAtOpen): each must still arrive with its own mode,
// 000 included, modification time and length, and be told in JSON
// with its size.
func TestTreeSendTakesDetailsAtOpen(t *testing.T) {
	root, src := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	modes := sendableModes(t)
	tree := filepath.Join(src, "tree")
	os.MkdirAll(filepath.Join(tree, "sub"), 0o755)
	when := time.Date(2019, 3, 4, 5, 6, 7, 0, time.UTC)
	for i, m := range modes {
		p := filepath.Join(tree, "sub", fmt.Sprintf("m%03o", m))
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte(i)}, 1000*(i+1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, when, when.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	r := mustRun(t, srv, src, []string{"--json"}, "send", "-r", "tree", target(srv.addr, "/"))
	for i, m := range modes {
		n := filepath.Join("tree", "sub", fmt.Sprintf("m%03o", m))
		fi, err := os.Stat(filepath.Join(root, n))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		mt := when.Add(time.Duration(i) * time.Hour)
		if fi.Mode().Perm() != m || !fi.ModTime().Equal(mt) || fi.Size() != int64(1000*(i+1)) {
			t.Errorf("%s: mode %v, time %v, %d bytes; want %v, %v, %d", n, fi.Mode().Perm(), fi.ModTime(), fi.Size(), m, mt, 1000*(i+1))
		}
		if want := fmt.Sprintf(`"event":"file_start","name":"tree/sub/m%03o","size":%d`, m, 1000*(i+1)); !strings.Contains(r.stdout, want) {
			t.Errorf("no %s in:\n%s", want, r.stdout)
		}
	}
}
