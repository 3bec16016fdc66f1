package serialfallback

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// commandPort is a line made of a program's standard input and output:
// C-Kermit's SET HOST /COMMAND (or /PIPE), for a Kermit reached through
// ssh, a terminal server's client, or run right here. The program's
// standard error stays the user's, so ssh can ask for a password and
// say why it failed.
//
// The program stays in kerf's process group: put in one of its own, an
// ssh asking for a password on the terminal would be stopped (SIGTTIN).
// So Ctrl-C reaches it too; kerf's E to the peer may then not get
// through, which is what happens to C-Kermit's too.
type commandPort struct {
	cmd    string
	proc   *exec.Cmd
	toProg *os.File // the program's standard input
	ofProg *os.File // its standard output

	exited  chan struct{} // closed once the program has been waited for
	waitErr error         // its exit, valid once exited is closed
	once    sync.Once
}

// commandGrace is how long Close lets the program end by itself once
// its input has ended (a Kermit's last words, a remote shell's logout)
// before it is terminated. A variable for tests.
var commandGrace = 3 * time.Second

// openCommand starts cmd with the shell, its standard input and output
// the line.
func openCommand(cmd string) (port, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("serialfallback: command: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("serialfallback: command: %w", err)
	}
	proc := exec.Command(shell, "-c", cmd)
	proc.Stdin, proc.Stdout, proc.Stderr = inR, outW, os.Stderr
	err = proc.Start()
	// The program holds its own copies of these ends now.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("serialfallback: starting command %q: %w", cmd, err)
	}
	p := &commandPort{cmd: cmd, proc: proc, toProg: inW, ofProg: outR, exited: make(chan struct{})}
	go func() {
		p.waitErr = proc.Wait()
		close(p.exited)
	}()
	return p, nil
}

// shell runs the command, as C-Kermit's /COMMAND does with its SHELL.
const shell = "/bin/sh"

// Read reads the program's output. Its end is the line's: the error
// then says how the program ended, and is still an io.EOF to callers
// that look for the line's end.
func (p *commandPort) Read(b []byte) (int, error) {
	n, err := p.ofProg.Read(b)
	if errors.Is(err, io.EOF) {
		select {
		case <-p.exited:
			return n, &CommandEndedError{Command: p.cmd, Exited: true, Err: p.waitErr}
		case <-time.After(time.Second):
			// It closed its output and lives on: say only that.
			return n, &CommandEndedError{Command: p.cmd}
		}
	}
	return n, err
}

func (p *commandPort) Write(b []byte) (int, error) {
	n, err := p.toProg.Write(b)
	if err != nil {
		// Its input closed is most often the program ending: its exit
		// status, reaped a moment later, says why (CI: "broken pipe"
		// instead of ssh's status 255, once in a while), as Read waits
		// for it.
		select {
		case <-p.exited:
			return n, &CommandEndedError{Command: p.cmd, Exited: true, Err: p.waitErr}
		case <-time.After(time.Second):
		}
	}
	return n, err
}

// Drain has nothing to wait for: a pipe delivers what it took.
func (p *commandPort) Drain() error { return nil }

// SetReadDeadline bounds Reads, as on a pty.
func (p *commandPort) SetReadDeadline(t time.Time) error { return p.ofProg.SetReadDeadline(t) }

// Close ends the program's input, lets it finish for commandGrace,
// then terminates it and what it started (SIGTERM, and SIGKILL a second
// later), so that no ssh or Kermit is left behind.
func (p *commandPort) Close() error {
	p.once.Do(func() {
		p.toProg.Close()
		p.ofProg.Close() // wakes a blocked Read
		select {
		case <-p.exited:
			return
		case <-time.After(commandGrace):
		}
		// The shell and what it started: a shell that did not exec its
		// one program leaves it running when signalled alone, and an
		// ssh -tt does not end at its input's end. The tree is found
		// before the first signal, which orphans it.
		pid := p.proc.Process.Pid
		tree := append(descendants(pid), pid)
		signalAll(tree, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(time.Second):
		}
		signalAll(tree, syscall.SIGKILL)
		<-p.exited
	})
	return nil
}

// CommandEndedError is a line made by a command (LinkConfig.Command)
// ending because the program ended or closed its output. It matches
// io.ErrUnexpectedEOF: the other end went without a word.
type CommandEndedError struct {
	Command string
	Exited  bool  // the program has ended (else it only closed its output)
	Err     error // how it ended when it did not exit 0 (an *exec.ExitError)
}

func (e *CommandEndedError) Error() string {
	switch {
	case !e.Exited:
		return fmt.Sprintf("command %q closed its output", e.Command)
	case e.Err == nil:
		return fmt.Sprintf("command %q ended (exit status 0)", e.Command)
	default:
		return fmt.Sprintf("command %q ended: %v", e.Command, e.Err)
	}
}

func (e *CommandEndedError) Unwrap() []error {
	if e.Err == nil {
		return []error{io.ErrUnexpectedEOF}
	}
	return []error{io.ErrUnexpectedEOF, e.Err}
}
