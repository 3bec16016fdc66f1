package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// A password typed wrong at the prompt is asked for again, as ssh does:
// three tries, then the login fails (exit 3).
func TestPasswordPromptAsksAgain(t *testing.T) {
	root := t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, root+"/seen.txt", []byte("x"))
	for _, c := range []struct {
		name    string
		answers []string
		code    int
	}{
		{"second try", []string{"wrong", testPassword}, 0},
		{"third try", []string{"wrong", "wrong again", testPassword}, 0},
		{"three wrong", []string{"a", "b", "c"}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			argv, env := clientInvocation(t, srv, nil, "ls", target(srv.addr, "/"))
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, kerfBin, argv...)
			cmd.Env = append(env, "KERF_PASSWORD=") // the last one counts
			tty, err := pty.Start(cmd)
			if err != nil {
				t.Fatal(err)
			}
			defer tty.Close()
			var out bytes.Buffer
			r := bufio.NewReader(io.TeeReader(tty, &out))
			prompts := 0
			for _, a := range c.answers {
				if err := readUntil(r, "Password for "); err != nil {
					t.Fatalf("prompt %d never came (%v):\n%s", prompts+1, err, out.String())
				}
				prompts++
				tty.Write([]byte(a + "\n"))
			}
			io.Copy(io.Discard, r) // until the client exits (EIO)
			err = cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", code, c.code, out.String())
			}
			if more := strings.Count(out.String(), "Password for "); more != len(c.answers) {
				t.Errorf("asked %d times, want %d:\n%s", more, len(c.answers), out.String())
			}
			if c.code == 0 && !strings.Contains(out.String(), "seen.txt") {
				t.Errorf("listing lacks seen.txt:\n%s", out.String())
			}
		})
	}
}

// readUntil reads r until it has read s; the command's own timeout
// (exec.CommandContext) ends a wait for a prompt that never comes.
func readUntil(r *bufio.Reader, s string) error {
	var seen []byte
	for !bytes.HasSuffix(seen, []byte(s)) {
		b, err := r.ReadByte()
		if err != nil {
			return err
		}
		seen = append(seen, b)
	}
	return nil
}

// Ctrl-C at a prompt (the password, an unknown server's key) ends kerf
// at once with 130 and gives the terminal its echo back: the prompt's
// read held the command until Enter, and a SIGTERM did nothing (QA).
func TestInterruptAtPrompt(t *testing.T) {
	root := t.TempDir()
	srv := startServer(t, root, serverOpts{})
	password := func(argv, env []string) ([]string, []string) { return argv, append(env, "KERF_PASSWORD=") }
	hostKey := func(argv, env []string) ([]string, []string) {
		return slices.DeleteFunc(argv, func(a string) bool { return a == "--accept-new-host-key" }), env
	}
	for _, c := range []struct {
		name, prompt string
		edit         func(argv, env []string) ([]string, []string)
		term         bool // SIGTERM, not Ctrl-C
	}{
		{"password", "Password for ", password, false},
		{"host key", "Trust it and remember it? [y/N] ", hostKey, false},
		{"password SIGTERM", "Password for ", password, true},
		{"host key SIGTERM", "Trust it and remember it? [y/N] ", hostKey, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			argv, env := clientInvocation(t, srv, nil, "ls", target(srv.addr, "/"))
			argv, env = c.edit(argv, env)
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, kerfBin, argv...)
			cmd.Env = env
			tty, err := pty.Start(cmd)
			if err != nil {
				t.Fatal(err)
			}
			defer tty.Close()
			var out bytes.Buffer
			r := bufio.NewReader(io.TeeReader(tty, &out))
			if err := readUntil(r, c.prompt); err != nil {
				t.Fatalf("no prompt (%v):\n%s", err, out.String())
			}
			code, sig := 130, "interrupt"
			if c.term {
				code, sig = 143, "terminated"
				cmd.Process.Signal(syscall.SIGTERM)
			} else {
				tty.Write([]byte{3}) // Ctrl-C, as the terminal's INTR
			}
			io.Copy(io.Discard, r)
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != code {
				t.Fatalf("exit %v, want %d (the command's timeout is %v):\n%s", err, code, commandTimeout, out.String())
			}
			if !strings.Contains(out.String(), "\nkerf: interrupted ("+sig+") at a prompt") {
				t.Errorf("output does not say it was interrupted at the prompt:\n%s", out.String())
			}
			tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
			if err != nil {
				t.Fatal(err)
			}
			if tio.Lflag&unix.ECHO == 0 {
				t.Error("the terminal's echo is left off")
			}
		})
	}
}

// "n" to an unknown server's key ends the command (exit 3) after one
// question: it was asked twice (QA), the retry being meant for a "y"
// that came after the server's handshake timeout.
func TestNoToUnknownHostAsksOnce(t *testing.T) {
	srv := startServer(t, t.TempDir(), serverOpts{})
	argv, env := clientInvocation(t, srv, nil, "ls", target(srv.addr, "/"))
	argv = slices.DeleteFunc(argv, func(a string) bool { return a == "--accept-new-host-key" })
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kerfBin, argv...)
	cmd.Env = env
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out bytes.Buffer
	r := bufio.NewReader(io.TeeReader(tty, &out))
	const prompt = "Trust it and remember it? [y/N] "
	if err := readUntil(r, prompt); err != nil {
		t.Fatalf("no prompt (%v):\n%s", err, out.String())
	}
	tty.Write([]byte("n\n"))
	io.Copy(io.Discard, r)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit %v, want 3:\n%s", err, out.String())
	}
	if n := strings.Count(out.String(), prompt); n != 1 {
		t.Errorf("asked %d times, want once:\n%s", n, out.String())
	}
}

// A "no" given after the TLS handshake's 15 s bound is still said as a
// refused key (exit 3), not as a server that did not answer (review).
func TestLateNoToUnknownHost(t *testing.T) {
	srv := startServer(t, t.TempDir(), serverOpts{})
	argv, env := clientInvocation(t, srv, nil, "ls", target(srv.addr, "/"))
	argv = slices.DeleteFunc(argv, func(a string) bool { return a == "--accept-new-host-key" })
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kerfBin, argv...)
	cmd.Env = env
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out bytes.Buffer
	r := bufio.NewReader(io.TeeReader(tty, &out))
	if err := readUntil(r, "Trust it and remember it? [y/N] "); err != nil {
		t.Fatalf("no prompt (%v):\n%s", err, out.String())
	}
	time.Sleep(16 * time.Second) // past the client's handshake bound
	tty.Write([]byte("n\n"))
	io.Copy(io.Discard, r)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit %v, want 3:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "unknown server") || strings.Contains(out.String(), "not answering") {
		t.Errorf("a late no is not said as a refused key:\n%s", out.String())
	}
}
