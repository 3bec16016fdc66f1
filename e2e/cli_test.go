package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	recv := exec.Command(kerfBin, "serial", "receive", "--line", b, "--dir", in)
	var rout syncBuffer
	recv.Stdout, recv.Stderr = &rout, &rout
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recv.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- recv.Wait() }()
	r := run(t, nil, local, nil, "serial", "send", "--line", a, "a.bin", "b.bin")
	if r.code != 4 {
		t.Errorf("send: want exit 4, got %s", r)
	}
	select {
	case err := <-done:
		ee, _ := err.(*exec.ExitError)
		if ee == nil || ee.ExitCode() != 4 || !strings.Contains(rout.String(), "1 file(s) not received: a.bin") {
			t.Errorf("receive: want exit 4 naming a.bin, got %v:\n%s", err, rout.String())
		}
	case <-time.After(commandTimeout):
		t.Fatalf("kerf serial receive did not finish:\n%s", rout.String())
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
	for _, want := range []string{` e\x1b[31mRED\x1b[0m` + "\n", ` tab\x09name` + "\n", ` cr\x0dover` + "\n", ` csi\u009b2J` + "\n", ` bad\xffutf8` + "\n", " 日本語 🙂 é.txt\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("listing does not show %q:\n%s", want, r.stdout)
		}
	}
}
