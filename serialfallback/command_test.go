//go:build linux

package serialfallback

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A command's standard output is the line's input and its standard
// input the line's output: cat sends back what it is given, parity
// applied on the way.
func TestCommandLinkCarriesBytes(t *testing.T) {
	l, err := Open(LinkConfig{Command: "cat", Parity: ParityEven})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := []byte("\x01# Sx ~* @-#Y3~Z\r")
	if _, err := l.Write(want); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 0, len(want))
	buf := make([]byte, 64)
	for len(got) < len(want) {
		n, err := l.Read(buf)
		if err != nil {
			t.Fatalf("read after %q: %v", got, err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read back %q, want %q", got, want)
	}
}

// A command that ends is the line's end, and the error says how it
// ended; it is still an unexpected EOF to the engine.
func TestCommandEndedSaysHow(t *testing.T) {
	defer func(g time.Duration) { commandGrace = g }(commandGrace)
	commandGrace = 100 * time.Millisecond
	for _, c := range []struct {
		cmd, want string
		status    int
	}{
		{"echo on stderr >&2; exit 3", "exit status 3", 3},
		{"true", "exit status 0", 0},
		{"exec >&-; sleep 30", "closed its output", -1},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			l, err := Open(LinkConfig{Command: c.cmd})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			_, err = l.Read(make([]byte, 16))
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("read: %v, want an unexpected EOF", err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), strconv.Quote(c.cmd)) {
				t.Errorf("read: %q, want the command and %q", err, c.want)
			}
			var ee *exec.ExitError
			if got := errors.As(err, &ee); got != (c.status > 0) || got && ee.ExitCode() != c.status {
				t.Errorf("exit error %v in %v, want status %d", ee, err, c.status)
			}
		})
	}
}

// A write to a command that closed its input and then ends says how
// it ended, not only "broken pipe" (CI: the exit status was reaped a
// moment after the write failed).
func TestCommandWriteSaysHowItEnded(t *testing.T) {
	defer func(g time.Duration) { commandGrace = g }(commandGrace)
	commandGrace = 100 * time.Millisecond
	l, err := Open(LinkConfig{Command: "exec 0<&-; sleep 0.2; exit 255"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var werr error
	for i := 0; i < 100 && werr == nil; i++ { // until the pipe is seen closed
		_, werr = l.Write(bytes.Repeat([]byte("x"), 64<<10))
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ExitCode() != 255 {
		t.Errorf("write: %v, want the command's exit status 255", werr)
	}
}

// A command that does not end when its input does is terminated on
// Close, with what it started: a shell waiting for its program (the
// program would outlive a signal to the shell alone), and one that
// ignores SIGTERM.
func TestCommandCloseEndsWhatItStarted(t *testing.T) {
	defer func(g time.Duration) { commandGrace = g }(commandGrace)
	commandGrace = 100 * time.Millisecond
	for _, cmd := range []string{
		"sleep 300; true",
		"trap '' TERM; sleep 300; true",
	} {
		t.Run(cmd, func(t *testing.T) {
			l, err := Open(LinkConfig{Command: cmd})
			if err != nil {
				t.Fatal(err)
			}
			cp := l.(*link).p.(*commandPort)
			var started []int
			for deadline := time.Now().Add(10 * time.Second); len(started) == 0; {
				if time.Now().After(deadline) {
					t.Fatal("the command's sleep never showed")
				}
				started = descendants(cp.proc.Process.Pid)
				time.Sleep(10 * time.Millisecond)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for _, pid := range started {
				for deadline := time.Now().Add(10 * time.Second); alive(pid); {
					if time.Now().After(deadline) {
						t.Fatalf("process %d that the command started still runs after Close", pid)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
}

// alive reports whether pid runs (not gone, not a zombie waiting for
// whoever inherited it).
func alive(pid int) bool {
	f, ok := procStat(pid)
	return ok && len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// The /proc stat line's name may hold spaces and parentheses.
func TestParentOfOddName(t *testing.T) {
	dir := t.TempDir()
	odd := dir + "/a (b) c"
	if err := os.Symlink("/bin/sleep", odd); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if pp, ok := parentOf(cmd.Process.Pid); !ok || pp != os.Getpid() {
		t.Fatalf("parentOf(%d) = %d, %v; want %d", cmd.Process.Pid, pp, ok, os.Getpid())
	}
	if d := descendants(os.Getpid()); !slices.Contains(d, cmd.Process.Pid) {
		t.Fatalf("descendants %v lack %d", d, cmd.Process.Pid)
	}
}
