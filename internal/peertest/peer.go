package peertest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// Peers RequirePeer knows how to look for.
var knownPeers = map[string]bool{"kermit": true, "gkermit": true, "sz": true, "rz": true, "socat": true}

// RequirePeer returns the path of the peer program name (kermit, gkermit,
// sz, rz or socat) found on PATH. If it is missing the test fails when the
// environment variable CI is "true" and is skipped otherwise.
func RequirePeer(t testing.TB, name string) string {
	t.Helper()
	if !knownPeers[name] {
		t.Fatalf("peertest: RequirePeer(%q): not a known peer (kermit, gkermit, sz, rz, socat)", name)
	}
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("peertest: peer %q not found on PATH (%v); install it (Debian: apt-get install %s)", name, err, debianPackage(name))
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI=true, so a missing peer is a failure, not a skip", msg)
	}
	t.Skip(msg)
	return ""
}

func debianPackage(name string) string {
	switch name {
	case "kermit":
		return "ckermit"
	case "sz", "rz":
		return "lrzsz"
	}
	return name
}

// Peer is a peer program running for one test. It is killed at test
// cleanup if still running.
type Peer struct {
	// Name is the program name, e.g. "kermit".
	Name string
	// Dir is the peer's working directory: where it reads relative names
	// and, for G-Kermit and a C-Kermit script without CD, receives files.
	Dir string
	// Script is the C-Kermit command file it runs ("" for G-Kermit).
	Script string
	// Log is C-Kermit's transaction log ("" for G-Kermit).
	Log string

	cmd     *exec.Cmd
	out     *syncBuffer
	start   time.Time
	done    chan struct{}
	waitErr error // from cmd.Wait, valid once done is closed

	mu     sync.Mutex
	result error
	waited bool
}

func startPeer(t testing.TB, p *Peer, cmd *exec.Cmd) *Peer {
	t.Helper()
	p.out = &syncBuffer{}
	if cmd.Stdout == nil {
		cmd.Stdout = p.out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = p.out
	}
	cmd.Dir = p.Dir
	// A session (and so a process group) of its own: a timeout kills
	// whatever the peer started, and the peer has no controlling terminal
	// to stop on or read keyboard interrupts from (unless it is given
	// one: CKermitWithConsole).
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	// Once the peer has exited, stop waiting for its output pipe after a
	// while even if something it started still holds the pipe open.
	cmd.WaitDelay = 5 * time.Second
	p.cmd = cmd
	p.done = make(chan struct{})
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("peertest: start %s: %v", p.Name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.kill()
			<-p.done
			t.Logf("peertest: %s still running at cleanup, killed; output:\n%s", p.Name, p.out.String())
		}
	})
	return p
}

// Pid is the peer's process ID.
func (p *Peer) Pid() int { return p.cmd.Process.Pid }

func (p *Peer) kill() {
	if p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Wait waits up to timeout for the peer to exit. It returns nil if the peer
// exited with status 0; otherwise an error that carries the exit status (or
// says the peer was killed after timeout) followed by everything the peer
// printed and, for C-Kermit, its transaction log. Waiting again returns the
// same result.
func (p *Peer) Wait(timeout time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waited {
		return p.result
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var status string
	select {
	case <-p.done:
		if p.waitErr == nil {
			p.waited = true
			return nil
		}
		status = p.waitErr.Error()
		var ee *exec.ExitError
		if errors.As(p.waitErr, &ee) && ee.Exited() {
			status = fmt.Sprintf("exit status %d", ee.ExitCode())
		}
		status = fmt.Sprintf("%s after %.1fs", status, time.Since(p.start).Seconds())
	case <-timer.C:
		p.kill()
		<-p.done
		status = fmt.Sprintf("still running after %v, killed", timeout)
	}
	p.waited = true
	p.result = fmt.Errorf("peertest: %s: %s\n%s", p.Name, status, p.Report())
	return p.result
}

// ExitCode is the peer's exit status, or -1 while it runs or if it was
// killed by a signal.
func (p *Peer) ExitCode() int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// Output is everything the peer has written to stdout and stderr so far
// (for G-Kermit, stderr only: its stdout is the line).
func (p *Peer) Output() string { return p.out.String() }

// Report is the peer's output, script and transaction log, for error
// messages.
func (p *Peer) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s %s (in %s) output ---\n%s", p.Name, strings.Join(p.cmd.Args[1:], " "), p.Dir, p.out.String())
	if p.Script != "" {
		if s, err := os.ReadFile(p.Script); err == nil {
			fmt.Fprintf(&b, "--- script %s ---\n%s", p.Script, s)
		}
	}
	if p.Log != "" {
		if s, err := os.ReadFile(p.Log); err == nil {
			fmt.Fprintf(&b, "--- transaction log %s ---\n%s", p.Log, s)
		}
	}
	return b.String()
}

// CKermitSpeed is the speed the CKermit prologue sets. On a pty it only
// feeds C-Kermit's own timing estimates; a script may SET SPEED again.
const CKermitSpeed = 115200

// CKermitPrologue returns the commands CKermit puts before a caller's
// script: open dev as the line at speed, make transfers binary and
// byte-exact, and log transactions to logFile ("" for no log). See the
// package documentation for why each line is there.
func CKermitPrologue(dev string, speed int, logFile string) string {
	var b strings.Builder
	// First: a SET LINE that fails (the line locked) must stop the
	// script, not leave C-Kermit serving its own terminal, unheard.
	b.WriteString("set take error on\n")
	if logFile != "" {
		fmt.Fprintf(&b, "log transactions {%s}\n", logFile)
	}
	fmt.Fprintf(&b, "set line %s\n", dev)
	fmt.Fprintf(&b, "set speed %d\n", speed)
	b.WriteString(`set carrier-watch off
set flow none
set exit warning off
set transfer interruption off
set transfer display brief
set transfer mode manual
set file type binary
set file names literal
set file collision overwrite
set delay 0
`)
	return b.String()
}

// ckermitScriptError is the exit status a CKermit peer reports when its
// script stopped on an error: C-Kermit then reads commands from stdin,
// which holds "exit 99".
const ckermitScriptError = 99

// CKermit runs C-Kermit in dir on the line dev: it writes a command file
// made of CKermitPrologue(dev, CKermitSpeed, log), then script (one command
// a line, e.g. "send *" or "cd out\nreceive"), then "exit", and starts
// "kermit FILE -Y". The command file and transaction log live in a
// directory of their own, not in dir.
//
// Exit status 0 means every command and transfer succeeded, 99 that the
// script stopped on a failed command, a failed transfer included (see the
// package documentation).
func CKermit(t testing.TB, dev string, script string, dir string) *Peer {
	t.Helper()
	ClearLineLock(dev)
	t.Cleanup(func() { ClearLineLock(dev) }) // after startPeer's kill, if any
	return CKermitKeepingLocks(t, dev, script, dir)
}

// CKermitKeepingLocks is CKermit without clearing the line's lock files:
// for tests of the locks themselves (another program holding the line).
func CKermitKeepingLocks(t testing.TB, dev string, script string, dir string) *Peer {
	t.Helper()
	p, bin := ckermitScript(t, dev, script, dir)
	stdin := filepath.Join(filepath.Dir(p.Script), "stdin")
	if err := os.WriteFile(stdin, fmt.Appendf(nil, "exit %d\n", ckermitScriptError), 0o644); err != nil {
		t.Fatalf("peertest: %v", err)
	}
	in, err := os.Open(stdin)
	if err != nil {
		t.Fatalf("peertest: %v", err)
	}
	t.Cleanup(func() { in.Close() })
	// The command file must come before -Y, or C-Kermit ignores it.
	cmd := exec.Command(bin, p.Script, "-Y")
	cmd.Stdin = in
	return startPeer(t, p, cmd)
}

// ckermitScript is a C-Kermit Peer in dir on the line dev, not started:
// its command file, CKermitPrologue then script then "exit", written in
// a directory of its own beside its transaction log; and the program.
func ckermitScript(t testing.TB, dev, script, dir string) (*Peer, string) {
	t.Helper()
	bin := RequirePeer(t, "kermit")
	work := t.TempDir()
	p := &Peer{
		Name:   "kermit",
		Dir:    dir,
		Script: filepath.Join(work, "peer.ksc"),
		Log:    filepath.Join(work, "transactions.log"),
	}
	text := CKermitPrologue(dev, CKermitSpeed, p.Log) + strings.TrimRight(script, "\n") + "\nexit\n"
	if err := os.WriteFile(p.Script, []byte(text), 0o644); err != nil {
		t.Fatalf("peertest: %v", err)
	}
	return p, bin
}

// CKermitWithConsole is CKermit with a terminal of its own as its
// console (standard input, output and error, and its controlling
// terminal): console is the terminal's other end, on which a test types
// what a user at C-Kermit's keyboard would (Ctrl-X to cancel a file
// under way; the script must SET TRANSFER INTERRUPTION ON). What
// C-Kermit shows there goes to its Output. A script that stops on an
// error leaves C-Kermit at its prompt until the test ends.
func CKermitWithConsole(t testing.TB, dev string, script string, dir string) (p *Peer, console *os.File) {
	t.Helper()
	ClearLineLock(dev)
	t.Cleanup(func() { ClearLineLock(dev) })
	p, bin := ckermitScript(t, dev, script, dir)
	m, s, err := pty.Open()
	if err != nil {
		t.Fatalf("peertest: open pty: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	// Raw, as a terminal C-Kermit reads keys from one at a time: this
	// C-Kermit leaves it as it finds it while it runs a script, and a
	// cooked one held a key back until a carriage return, which it
	// takes for "send the packet again".
	if _, err := term.MakeRaw(int(s.Fd())); err != nil {
		t.Fatalf("peertest: raw mode on %s: %v", s.Name(), err)
	}
	cmd := exec.Command(bin, p.Script, "-Y")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	p = startPeer(t, p, cmd)
	out := p.out
	go io.Copy(out, m) // (ends when the terminal closes)
	return p, m
}

// ClearLineLock removes the UUCP lock file C-Kermit (and kerf) keep for
// the line dev (LCK..NAME, NAME the last element of the device dev leads
// to, in /var/lock or /run/lock). A C-Kermit killed at a test's end leaves
// its lock behind, and C-Kermit and kerf take a lock naming a live
// process for one in use: when a later pty got the number and the dead
// C-Kermit's PID was another process's by then, SET LINE failed and the
// peer exited (CI: a get from a C-Kermit server timed out 21 times). A
// pty a test has just made is nobody else's, so any lock naming it is
// stale; every pty peertest makes is cleared so.
func ClearLineLock(dev string) {
	target, err := filepath.EvalSymlinks(dev)
	if err != nil {
		return
	}
	for _, dir := range []string{"/var/lock", "/run/lock"} {
		os.Remove(filepath.Join(dir, "LCK.."+filepath.Base(target)))
	}
}

// GKermit runs G-Kermit with args on the line dev, in a new empty
// directory (Peer.Dir): received files land there, files to send need
// absolute names. Use GKermitIn to choose the directory.
func GKermit(t testing.TB, dev string, args ...string) *Peer {
	t.Helper()
	return GKermitIn(t, dev, t.TempDir(), args...)
}

// GKermitIn runs G-Kermit with args in dir on the line dev. G-Kermit uses
// its standard input and output as the line, so both are dev, opened here;
// its messages go to standard error, which Peer.Output returns.
func GKermitIn(t testing.TB, dev, dir string, args ...string) *Peer {
	t.Helper()
	bin := RequirePeer(t, "gkermit")
	f, err := os.OpenFile(dev, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("peertest: open line for gkermit: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	p := &Peer{Name: "gkermit", Dir: dir}
	cmd := exec.Command(bin, args...)
	cmd.Stdin = f
	cmd.Stdout = f
	return startPeer(t, p, cmd)
}

// syncBuffer is a bytes.Buffer safe for the exec copier goroutines and
// readers at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
