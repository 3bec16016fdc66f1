// Command kerf moves files: a Kermit control connection with raw data
// connections beside it over TCP, or classic Kermit over a serial line.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/urfave/cli/v2"

	"kerf/kermit"
)

// Exit codes, so scripts can tell failures apart.
const (
	exitUsage    = 2 // bad command line
	exitConnect  = 3 // could not connect or authenticate
	exitTransfer = 4 // connected, but a transfer failed
)

type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, a...)}
}
func connectErr(err error) error { return &exitError{exitConnect, err} }

// credentialsErr is a login this side cannot make, for want of its
// credentials (no password and no terminal to ask on, a password file
// or key missing): exit 3, as a login refused, not 2, which says the
// command line is wrong (QA ak: a cron job whose secret went missing
// exited as if mistyped, and a wrapper alerting on 3 did not fire).
func credentialsErr(format string, a ...any) error {
	return connectErr(fmt.Errorf(format, a...))
}
func transferErr(err error) error { return &exitError{exitTransfer, err} }

// mayExecAgain is set by main: only the kerf program re-executes itself
// (--timer-slack).
// A test that runs the command line in-process would re-execute the test
// binary, which ran every test again from the start and left the first
// image's temporary directories behind.
var mayExecAgain bool

func main() {
	ctx, caught := signalContext()
	stopProfiling, err := startProfiling()
	if err != nil {
		stopProfiling() // one that did start
		fmt.Fprintln(os.Stderr, "kerf:", err)
		os.Exit(exitUsage)
	}
	quitWithStacks(func() {
		restorePromptTerminal()
		stopProfiling()
	})
	app := newApp()
	app.OnUsageError = onUsageError
	app.Action = jsonErrors(unknownCommand)
	app.Before = checkGlobalFlags
	// cli would exit on its own errors (3 for "No help topic" of `kerf
	// help foo`); main gives them the usage code instead.
	app.ExitErrHandler = func(*cli.Context, error) {}
	setUsageErrors(app.Commands)
	mayExecAgain = true
	err = runApp(ctx, app, os.Args)
	stopProfiling()
	if err == nil {
		return
	}
	if sig := caught(); sig != 0 {
		// Interrupted: the engine has told the peer (E packet). The
		// shell's convention: 128 + the signal (130 for Ctrl-C, 143
		// for SIGTERM).
		var ie *interruptError
		if !errors.As(err, &ie) {
			err = &interruptError{sig, err}
		}
		fmt.Fprintln(os.Stderr, "kerf:", printable(plainWords(err.Error())))
		os.Exit(128 + int(sig))
	}
	// Errors carry names and messages from the peer.
	fmt.Fprintln(os.Stderr, "kerf:", printable(plainWords(err.Error())))
	if errors.Is(err, kermit.ErrCtrlC) {
		os.Exit(128 + int(syscall.SIGINT)) // Ctrl-C typed on the line (serial --stdio)
	}
	if loginRequired(err) || errors.Is(err, kermit.ErrNoAnswer) {
		// Not logged in, whatever the command was; or no peer answered
		// on the line at all, as a server that cannot be reached (QA
		// ak: exit 4, a transfer's failure, where TCP's said 3).
		os.Exit(exitConnect)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	os.Exit(exitUsage)
}

// loginRequired reports whether err is a server's refusal of a command
// for want of a login (C-Kermit's "Login required", kerf's "login
// required"): exit 3, as a refused login is, not 4 (QA s: a script
// could not tell it from a failed transfer).
func loginRequired(err error) bool {
	var pe *kermit.PeerError
	if !errors.As(err, &pe) {
		return false
	}
	msg := strings.ToLower(strings.TrimSpace(pe.Msg))
	return strings.HasPrefix(msg, "login required") || strings.HasPrefix(msg, "kerf: login required")
}

// runApp runs app on the command line args, flags after arguments
// moved first (flagsFirst).
func runApp(ctx context.Context, app *cli.App, args []string) error {
	moved, err := flagsFirst(app, args)
	if err != nil {
		// A usage error before cli runs: with --json, as the event
		// cli's own would give (onUsageError).
		if slices.ContainsFunc(args, func(a string) bool { return a == "--json" || a == "-json" || a == "--json=true" }) {
			json.NewEncoder(os.Stdout).Encode(jsonEvent{Event: "error", Error: err.Error()})
			return &jsonReported{err}
		}
		return err
	}
	return app.RunContext(ctx, moved)
}

// hangupReloads: SIGHUP does not stop the command but is a running
// server's reload (serveHangup).
var hangupReloads atomic.Bool

// hangupIgnored: the command started with SIGHUP ignored (nohup), which
// signalContext leaves so; catchHangup catches it all the same, for a
// server, whose SIGHUP is a reload that keeps it serving, as nohup
// wants (QA as F5: a server under nohup never reopened its xferlog).
var (
	hangupIgnored bool
	catchHangup   = func() {}
)

// signalContext returns a context cancelled by SIGINT, SIGTERM or
// SIGHUP, and a function that says which of them came first (0: none).
// Later ones are caught too, so that the engine can still tell the peer.
// SIGHUP (a terminal closed) stops a client as SIGTERM does, telling the
// peer and keeping partials; a running server without a terminal (a
// service) takes it as a daemon's reload (hangupReloads).
func signalContext() (context.Context, func() syscall.Signal) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigc := make(chan os.Signal, 1)
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	hangupIgnored = signal.Ignored(syscall.SIGHUP)
	if !hangupIgnored {
		// (Ignored, under nohup: left so; Notify would undo it.)
		sigs = append(sigs, syscall.SIGHUP)
	}
	catchHangup = func() { signal.Notify(sigc, syscall.SIGHUP) }
	signal.Notify(sigc, sigs...)
	var first atomic.Int32
	go func() {
		for s := range sigc {
			if s == syscall.SIGHUP && hangupReloads.Load() {
				// A service's reload, a drain under way too (review:
				// taken for the second signal, it cut every transfer).
				serveHangup()
				continue
			}
			if n, ok := s.(syscall.Signal); ok {
				first.CompareAndSwap(0, int32(n))
			}
			if ctx.Err() != nil {
				select {
				case laterSignal <- s:
				default:
				}
			}
			cancel(&signalCause{s})
		}
	}()
	return ctx, func() syscall.Signal { return syscall.Signal(first.Load()) }
}

// quitWithStacks makes SIGQUIT (Ctrl-\) what it is in Go, every
// goroutine's stack on stderr to see where a process hangs, but exit
// 131 (128 + SIGQUIT) as a shell's other signals, not the runtime's 2,
// which is kerf's usage error (QA ak). The peer is not told: a quit is
// a hard stop; partials stay for --resume. cleanup runs first: a
// password prompt's terminal gets its echo back, a CPU profile is
// written out (review 56).
func quitWithStacks(cleanup func()) {
	qc := make(chan os.Signal, 1)
	signal.Notify(qc, syscall.SIGQUIT)
	go func() {
		<-qc
		cleanup()
		buf := make([]byte, 1<<20)
		for {
			n := runtime.Stack(buf, true)
			if n < len(buf) || len(buf) >= 64<<20 {
				buf = buf[:n]
				break
			}
			buf = make([]byte, 2*len(buf))
		}
		os.Stderr.Write(buf)
		fmt.Fprintln(os.Stderr, "kerf: quit (SIGQUIT): every goroutine's stack is above")
		os.Exit(128 + int(syscall.SIGQUIT))
	}()
}

// laterSignal has the signals that come after the one that cancelled
// the command's context (a draining server's second: end now).
var laterSignal = make(chan os.Signal, 1)

// signalCause is why the command's context was cancelled: a signal.
type signalCause struct{ sig os.Signal }

func (c *signalCause) Error() string { return fmt.Sprintf("interrupted (%v)", c.sig) }

// interruptError is a command's error once a signal stopped it, in its
// own words: the engine's are "context canceled".
type interruptError struct {
	sig os.Signal
	err error
}

// sessionBegan: the command reached its peer (logged in, or opened its
// serial line), so an interruption may have a peer to tell and files
// under way.
var sessionBegan atomic.Bool

func (e *interruptError) Error() string {
	if errors.Is(e.err, errAtPrompt) {
		return fmt.Sprintf("interrupted (%v) at a prompt", e.sig)
	}
	if !sessionBegan.Load() {
		// (QA ak: an E packet and partials were spoken of while the
		// TLS handshake went on.)
		return fmt.Sprintf("interrupted (%v) before a session with the peer began: nothing was sent or received", e.sig)
	}
	kept := "what came of files under way is kept for --resume (but of small ones, sent again whole)"
	if errors.Is(e.err, errFromStdin) {
		kept = stdinNotResumable
	}
	return fmt.Sprintf("interrupted (%v): the peer was sent an E packet (if the link still carries it); %s", e.sig, kept)
}
func (e *interruptError) Unwrap() error { return e.err }

// interrupted is err, said as an interruption if a signal cancelled ctx.
func interrupted(ctx context.Context, err error) error {
	var sc *signalCause
	var ie *interruptError
	if err == nil || ctx == nil || !errors.As(context.Cause(ctx), &sc) || errors.As(err, &ie) {
		return err
	}
	return &interruptError{sc.sig, err}
}

// onUsageError turns a flag the command line got wrong into a usage
// error (exit 2), printed once and, with --json, as an error event,
// instead of cli's "Incorrect Usage" and the whole help on stdout.
func onUsageError(c *cli.Context, err error, _ bool) error {
	uerr := usageErr("%s (see %s --help)%s", unitHint(longFlags(err.Error()), func(name string) bool { return isDurationFlag(c, name) }), strings.Join(commandPath(c), " "), dashFileHint(err.Error()))
	if enc := jsonOutput(c); enc != nil {
		enc.Encode(jsonEvent{Event: "error", Error: uerr.Error()})
		return &jsonReported{uerr}
	}
	return uerr
}

// undefinedFlag is Go's flag error for a flag no command has.
var undefinedFlag = regexp.MustCompile(`flag provided but not defined: -(-?[^ ]+)`)

// dashFileHint says, when the flag msg refuses is a local file's name
// (QA r: "-leading-dash"), how to give it as one.
func dashFileHint(msg string) string {
	m := undefinedFlag.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	for _, name := range []string{"-" + m[1], "--" + m[1]} {
		if _, err := os.Lstat(name); err == nil {
			return fmt.Sprintf("; a file named %s is given as ./%s, or after --", name, name)
		}
	}
	return ""
}

// unitless is the flag error of a duration given as a bare number
// (QA: "--idle-timeout 90" was a "parse error").
var unitless = regexp.MustCompile(`(invalid value "([0-9]+(?:\.[0-9]+)?)" for flag --([a-z0-9-]+)): parse error`)

// unitHint says what a unitless duration in msg lacks, if the flag it
// names is one (isDuration; review: "--sessions 1.5" was told of units).
func unitHint(msg string, isDuration func(name string) bool) string {
	m := unitless.FindStringSubmatch(msg)
	if m == nil || !isDuration(m[3]) {
		return msg
	}
	return strings.Replace(msg, m[0], fmt.Sprintf("%s: a duration takes its unit (%ss, %sm, %sh)", m[1], m[2], m[2], m[2]), 1)
}

// isDurationFlag reports whether c's command, or the app, has a
// duration flag called name.
func isDurationFlag(c *cli.Context, name string) bool {
	var flags []cli.Flag
	if c.Command != nil {
		flags = c.Command.Flags
	}
	if c.App != nil {
		flags = append(slices.Clip(flags), c.App.Flags...)
	}
	for _, f := range flags {
		if d, ok := f.(*cli.DurationFlag); ok && (d.Name == name || slices.Contains(d.Aliases, name)) {
			return true
		}
	}
	return false
}

// oneDashFlag is a long flag's name as Go's flag package writes it in its
// errors ("flag provided but not defined: -bogus").
var oneDashFlag = regexp.MustCompile(`(defined: |flag |for |argument: )-([a-z][a-z0-9-]+)`)

// longFlags writes the long flags in a flag error with two dashes, as
// the help and the README do (QA); one-letter ones keep one.
func longFlags(msg string) string { return oneDashFlag.ReplaceAllString(msg, "$1--$2") }

func setUsageErrors(cmds []*cli.Command) {
	for _, cmd := range cmds {
		cmd.OnUsageError = onUsageError
		if len(cmd.Subcommands) > 0 && cmd.Action == nil {
			cmd.Action = unknownCommand
		}
		if cmd.Action != nil {
			// Every command's failure is a JSON error event with --json
			// (user and key commands printed none).
			cmd.Action = jsonErrors(cmd.Action)
		}
		setUsageErrors(cmd.Subcommands)
	}
}

// checkGlobalFlags refuses a --log-level slog does not know (it was
// taken as warn without a word).
func checkGlobalFlags(c *cli.Context) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return usageErr("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	return nil
}

// unknownCommand is the action of kerf and of its command groups (user,
// serial, ...): with no word after it, the help, and a usage error (exit
// 2: a script whose $CMD came out empty did nothing, and succeeded; QA
// ak); with one that names no command, a usage error too, not cli's "No
// help topic" (exit 3, which says "could not connect" to a script).
func unknownCommand(c *cli.Context) error {
	if c.NArg() == 0 {
		if !c.Bool("json") { // (with it, stdout is JSON lines: the error event alone)
			if err := cli.ShowSubcommandHelp(c); err != nil {
				return err
			}
		}
		return usageErr("no command given (see %s --help)", strings.Join(commandPath(c), " "))
	}
	return usageErr("no command %q (see %s --help)", c.Args().First(), strings.Join(commandPath(c), " "))
}

func newApp() *cli.App {
	return &cli.App{
		Name:                 "kerf",
		Version:              versionString(),
		Usage:                "bulk file transfer: Kermit negotiation with FTP-style raw data channels",
		EnableBashCompletion: true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON event per line instead of progress"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress output"},
			&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "debug, info, warn or error"},
		},
		Commands: []*cli.Command{
			serveCommand(),
			sendCommand(),
			getCommand(),
			remoteCommand("ls", "list a remote directory", 'D'),
			remoteCommand("mkdir", "make remote directories", 'm'),
			remoteCommand("rm", "delete remote files", 'E'),
			remoteCommand("rmdir", "remove empty remote directories", 'd'),
			mvCommand(),
			serialCommand(),
			userCommand(),
			keyCommand(),
			demoCommand(),
		},
	}
}
