package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A send of a tree past keepListed entries walks it again as it sends
// (the client's memory does not grow with the files): through the
// command line and a server, with one session and with several, the
// copy is whole, its directories have their modes and times, and a
// second file of a name in two trees fails alone (exit 4) while the
// first of the name arrives.
func TestSendWalkedAgain(t *testing.T) {
	defer func(n int) { keepListed = n }(keepListed)
	keepListed = 5
	t.Setenv("KERF_PASSWORD", "")
	os.Unsetenv("KERF_PASSWORD")
	base := t.TempDir()
	state, root, src := filepath.Join(base, "state"), filepath.Join(base, "root"), filepath.Join(base, "src")
	os.Mkdir(root, 0o755)
	when := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	var files []string
	for i := range 60 {
		name := fmt.Sprintf("a/d%d/sub%d/f%02d", i%3, i%2, i)
		p := filepath.Join(src, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, bytes.Repeat([]byte{byte(i)}, 1000+i), 0o644)
		files = append(files, name)
	}
	os.MkdirAll(filepath.Join(src, "b/a/d0/sub0"), 0o755)
	os.WriteFile(filepath.Join(src, "b/a/d0/sub0/f00"), []byte("second of the name"), 0o644)
	os.Chmod(filepath.Join(src, "a/d1"), 0o750)
	os.Chtimes(filepath.Join(src, "a/d1"), when, when)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	withStdin(t, "pw\n", func() {
		if code, err := run(ctx, "user", "add", "u", "--root", root, "--password-stdin", "--state", state); code != 0 {
			t.Fatal(err)
		}
	})
	addr := startServe(t, ctx, state, root)
	pwFile := filepath.Join(base, "pw")
	os.WriteFile(pwFile, []byte("pw\n"), 0o600)
	common := []string{"send", "-q", "-r", "--user", "u", "--password-file", pwFile, "--known-hosts", filepath.Join(base, "kh"), "--accept-new-host-key"}
	for _, sessions := range []string{"1", "3"} {
		t.Run("sessions "+sessions, func(t *testing.T) {
			dst := "in" + sessions
			args := append(append([]string{}, common...), "--sessions", sessions, filepath.Join(src, "a"), addr+"/"+dst+"/")
			if code, err := run(ctx, args...); code != 0 {
				t.Fatalf("send: exit %d: %v", code, err)
			}
			for _, name := range files {
				want, _ := os.ReadFile(filepath.Join(src, name))
				got, err := os.ReadFile(filepath.Join(root, dst, name))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes, %v", name, len(got), err)
				}
			}
			fi, err := os.Stat(filepath.Join(root, dst, "a/d1"))
			if err != nil || fi.Mode().Perm() != 0o750 || !fi.ModTime().Equal(when) {
				t.Errorf("a/d1: %v, %v; want mode 0750 and its time", fi, err)
			}
			// Two trees' contents: b/. holds a/d0/sub0/f00 again.
			dst2 := dst + "-two"
			args = append(append([]string{}, common...), "--sessions", sessions, src+"/.", filepath.Join(src, "b")+"/.", addr+"/"+dst2+"/")
			if code, _ := run(ctx, args...); code != exitTransfer {
				t.Errorf("send of a name twice: exit %d, want %d", code, exitTransfer)
			}
			want, _ := os.ReadFile(filepath.Join(src, "a/d0/sub0/f00"))
			if got, err := os.ReadFile(filepath.Join(root, dst2, "a/d0/sub0/f00")); err != nil || !bytes.Equal(got, want) {
				t.Errorf("the first file of the name: %q, %v", got, err)
			}
			if got, err := os.ReadFile(filepath.Join(root, dst2, "a/d2/sub1/f59")); err != nil || len(got) != 1059 {
				t.Errorf("a/d2/sub1/f59: %d bytes, %v", len(got), err)
			}
		})
	}
}
