package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"kerf/internal/peertest"
)

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// serial send --command runs the peer with its standard input and
// output as the line: here a real G-Kermit receiving, as through
// "ssh host gkermit -r" (its stderr, banner and all, stays kerf's).
func TestSerialCommandGKermit(t *testing.T) {
	gk := peertest.RequirePeer(t, "gkermit")
	local, in := t.TempDir(), t.TempDir()
	files := peertest.StandardFiles(300_000, 41)
	peertest.WriteFiles(t, local, files)
	args := []string{"serial", "send", "--command", "cd " + shellQuote(in) + " && exec " + shellQuote(gk) + " -r"}
	for _, f := range files {
		args = append(args, f.Name)
	}
	r := run(t, nil, local, nil, args[0], args[1:]...)
	if r.code != 0 {
		t.Fatalf("send through gkermit -r: %s", r)
	}
	if !peertest.CheckFiles(t, in, files) {
		t.Fatalf("files differ; send: %s", r)
	}
}

// serial get --command fetches from a C-Kermit server it started (on a
// pty of its own, as ssh -tt gives one: C-Kermit's remote mode uses
// its terminal), then ends its server mode: the command's shell goes on
// past C-Kermit and says so, which it could not had kerf terminated it.
func TestSerialCommandCKermitServer(t *testing.T) {
	ck := peertest.RequirePeer(t, "kermit")
	srv, local := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(srv, "s.bin"), randomBytes(100_000, 42))
	cmd := "cd " + shellQuote(srv) + " && script -qec " + shellQuote(shellQuote(ck)+" -q -x") + " /dev/null; echo C-Kermit server ended >&2"
	r := run(t, nil, local, nil, "serial", "get", "--command", cmd, "--dir", local, "s.bin")
	if r.code != 0 {
		t.Fatalf("get: %s", r)
	}
	sameFile(t, filepath.Join(srv, "s.bin"), filepath.Join(local, "s.bin"))
	if !strings.Contains(r.stderr, "C-Kermit server ended") {
		t.Errorf("C-Kermit's server mode was not ended by FINISH:\n%s", r)
	}
}

// kerf to kerf through a command, and what a command that fails says.
func TestSerialCommandKerfAndFailures(t *testing.T) {
	local, in := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "k.bin"), randomBytes(500_000, 43))
	recv := shellQuote(kerfBin) + " serial receive --stdio --dir " + shellQuote(in)
	if r := run(t, nil, local, nil, "serial", "send", "--command", recv, "k.bin"); r.code != 0 {
		t.Fatalf("send to kerf serial receive --stdio: %s", r)
	}
	sameFile(t, filepath.Join(local, "k.bin"), filepath.Join(in, "k.bin"))

	r := run(t, nil, local, nil, "serial", "send", "--command", "echo no route to host >&2; exit 255", "k.bin")
	if r.code != 4 || !strings.Contains(r.stderr, "no route to host") || !strings.Contains(r.stderr, "exit status 255") {
		t.Errorf("send through a command that fails: %s; want exit 4, its stderr and its exit status", r)
	}
	for _, args := range [][]string{
		{"--command", "cat", "--line", "/dev/null"},
		{"--command", "cat", "--stdio"},
		{"--command", " "},
		{"--command", "cat", "--flow", "rtscts"},
	} {
		if r := run(t, nil, local, nil, "serial", append(append([]string{"send"}, args...), "k.bin")...); r.code != 2 {
			t.Errorf("serial send %q: %s; want a usage error (exit 2)", args, r)
		}
	}
}
