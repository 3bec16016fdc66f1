package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Without HOME (a systemd unit without User=, env -i) the configuration
// is under the home directory the password database gives, never the
// current directory (QA ak: a send -r . took ./kerf/known_hosts along,
// and a server's key depended on its working directory).
func TestConfigDirWithoutHome(t *testing.T) {
	t.Setenv("HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Chdir(t.TempDir())
	for _, d := range []string{defaultConfigDir(), defaultStateDir(), defaultKnownHosts(), defaultIdentityDir()} {
		if !filepath.IsAbs(d) {
			t.Errorf("%s: not absolute, so under the current directory", d)
		}
	}
	// A HOME given is taken, a relative $XDG_CONFIG_HOME or not.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "relative")
	if d := defaultConfigDir(); d != filepath.Join(home, ".config", "kerf") {
		t.Errorf("HOME %s, XDG_CONFIG_HOME relative: %s", home, d)
	}
	// A relative HOME is no home: the configuration would move with the
	// current directory (review 56).
	t.Setenv("HOME", "relative")
	t.Setenv("XDG_CONFIG_HOME", "")
	if d := defaultConfigDir(); !filepath.IsAbs(d) {
		t.Errorf("HOME relative: %s, not absolute", d)
	}
	// What an earlier kerf made in the current directory without a
	// HOME stays in use (its server key pinned by clients; review 55).
	t.Setenv("HOME", "")
	if err := os.Mkdir("kerf", 0o700); err != nil {
		t.Fatal(err)
	}
	if d := defaultConfigDir(); d != "kerf" {
		t.Errorf("./kerf there, no HOME: %s, want ./kerf kept", d)
	}
}

// A server's state directory others may write is refused before a key
// is made in it (QA ak: a fresh private key was written there, then the
// server refused to start).
func TestServeRefusesUnprotectedStateFirst(t *testing.T) {
	state, root := t.TempDir(), t.TempDir()
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	code, err := run(context.Background(), "serve", "--state", state, "--root", root, "--listen", "127.0.0.1:0")
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("serve on a world-writable state: exit %d, %v; want a usage error saying so", code, err)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("the state directory holds %d entries (%s...): written before the refusal", len(entries), entries[0].Name())
	}
}

// An interruption before any session began says so, not that the peer
// was told and partials kept (QA ak: said of a TLS handshake under way).
func TestInterruptBeforeASession(t *testing.T) {
	was := sessionBegan.Load()
	defer sessionBegan.Store(was)
	for _, began := range []bool{false, true} {
		sessionBegan.Store(began)
		msg := (&interruptError{syscall.SIGTERM, context.Canceled}).Error()
		if before := strings.Contains(msg, "before a session"); before == began || strings.Contains(msg, "E packet") != began {
			t.Errorf("session began %v: %q", began, msg)
		}
	}
}

// A server whose state directory is full exits 3, as one whose address
// is in use, not 2, which says its command line is wrong (QA aj F7: a
// service manager told not to restart on 2 gave up on it for good). On
// a tmpfs of one page, filled (mounting it needs root).
func TestServeOnFullStateIsNotAUsageError(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4k,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	fill, err := os.Create(filepath.Join(mnt, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := fill.Write(make([]byte, 512)); err != nil {
			break
		}
	}
	fill.Close()
	code, err := run(context.Background(), "serve", "--state", mnt, "--root", t.TempDir(), "--listen", "127.0.0.1:0")
	if code != exitConnect || err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("serve on a full state directory: exit %d, %v; want 3 saying no space is left", code, err)
	}
}
