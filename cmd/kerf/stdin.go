package main

import (
	"cmp"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"kerf/kermit"
)

// Standard input as one file: `tar c dir | zstd | kerf send -
// host/backup/dir.tar.zst`, the mirror of get's "-" (stdout.go). Its
// length is unknown until it ends, and it cannot be read twice, so it
// travels as a classic Kermit file does: in D packets on the control
// connection (under TLS, as --in-band), whose window resends a damaged
// packet from memory; the data connections resend by reading the file
// again. Decided in docs/architecture.md ("Standard input sent as a
// file"). The receiver stores it under its temporary name and renames it
// once its Z came: as with any pipe, an end of input the producer did
// not mean (tar failing half-way) is an end all the same.

// stdinNotResumable is what a send of standard input that stopped
// comes to.
const stdinNotResumable = "a pipe (standard input, a named pipe) cannot be resumed: send it again whole (what the receiver got stays there, hidden, until that name is sent again)"

// errFromStdin marks the error of a send of standard input, so that an
// interruption is said in its terms (main.go).
var errFromStdin = errors.New("sending standard input")

// stdinSendError is such an error: err as it is, marked.
type stdinSendError struct{ err error }

func (e *stdinSendError) Error() string   { return e.err.Error() }
func (e *stdinSendError) Unwrap() []error { return []error{e.err, errFromStdin} }

// stdinFile is standard input as the engine's FileReader: read once, in
// order.
type stdinFile struct{ io.Reader }

func (stdinFile) ReadAt([]byte, int64) (int, error) {
	return 0, errors.New("standard input cannot be read again")
}

func (stdinFile) Close() error { return nil }

// streamed says what the local source p is when it is sent as standard
// input is, its length unknown until it ends, or "" when it is not: a
// named pipe (mkfifo's, or a shell's <(command), /dev/fd/N: QA, refused
// as not a regular file, where `kerf send <(tar c dir) host/dir.tar` is
// meant), or a file of /proc or /sys (isKernelFile).
func streamed(p string) string {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return ""
	case fi.Mode()&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case fi.Mode().IsRegular() && isKernelFile(p):
		return "a kernel's file, its size unknown"
	}
	return ""
}

// pipeLabel names a streamed source in messages: "-" is standard input.
func pipeLabel(src string) string {
	if src == "-" {
		return "- (standard input)"
	}
	return src + " (" + cmp.Or(streamed(src), "a pipe") + ")"
}

// checkSendStdin refuses what a pipe (standard input, "-", or a named
// pipe) cannot do, before any dial, and returns the name it is stored
// under (the target's last element; for a named pipe sent into a
// directory, its own name) and the remote directory it goes into.
func checkSendStdin(c *cli.Context, sources []string, rdir string) (dir, name string, err error) {
	label := pipeLabel(sources[0])
	switch {
	case len(sources) != 1:
		return "", "", usageErr("%s is sent alone, as one file", pipeLabel("-"))
	case c.Bool("recursive"):
		return "", "", usageErr("-r: %s is one file, not a tree", label)
	case c.Bool("resume"):
		return "", "", usageErr("--resume: %s cannot be read again from where an earlier transfer stopped", label)
	case c.Bool(removeSourceFlag.Name):
		return "", "", usageErr("--remove-source-files: %s is no file to remove", label)
	case sources[0] == "-" && (c.String("password-file") == "-" || c.String("password-file") == "/dev/stdin"):
		return "", "", usageErr("--password-file %s: standard input is the file; give the password in KERF_PASSWORD or a file, or log in with a key", c.String("password-file"))
	}
	dir, name = path.Dir(rdir), path.Base(rdir)
	if rdir == "" || strings.HasSuffix(rdir, "/") || name == "." || name == ".." || name == "/" {
		if sources[0] == "-" || inFdDir(sources[0]) {
			return "", "", usageErr("%s needs a name to be stored as: HOST[:PORT]/NAME or HOST[:PORT]/DIR/NAME", label)
		}
		// A named pipe of its own name (mkfifo out.tar) goes into the
		// directory under it, as a file would.
		dir, name = strings.TrimSuffix(rdir, "/"), filepath.Base(sources[0])
	}
	if !c.Bool("classic") {
		if f := dataFlagGiven(c); f != "" {
			return "", "", usageErr("%s goes in the control connection's packets, as with --in-band: --%s has nothing to do", label, f)
		}
		if err := c.Set("in-band", "true"); err != nil {
			return "", "", err
		}
	}
	return dir, name, nil
}

// inFdDir reports whether p is a descriptor's name (/dev/fd/63 of a
// shell's <(command)), whose last element names nothing to store.
func inFdDir(p string) bool {
	d := filepath.Dir(p)
	return d == "/dev/fd" || strings.HasPrefix(d, "/proc/") && filepath.Base(d) == "fd"
}

// stdinList is the send's one file: src (standard input for "-", else
// the named pipe src) under name, read until ctx ends.
func stdinList(ctx context.Context, src, name string) kermit.FileList {
	return kermit.ListOf([]kermit.OutgoingFile{{
		Name: name, Size: -1,
		Open: func() (kermit.FileReader, error) {
			if src == "-" {
				return stdinFile{cancelable(ctx, os.Stdin)}, nil
			}
			// (Opened when the file's turn comes: the open of a
			// named pipe waits for its writer. A kernel's file opens
			// as one.)
			f, err := openPipe(ctx, src)
			if err != nil {
				return nil, err
			}
			return stdinFile{cancelable(ctx, f)}, nil
		},
	}})
}

// openPipe opens the named pipe src for reading, or fails once ctx ends
// (the open blocks until a writer opens it: an interrupt must not wait
// for one).
func openPipe(ctx context.Context, src string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(src)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

// cancelable is r read by a goroutine of its own through a pipe that
// fails once ctx ends: a read of standard input blocks until
// something comes (a producer that writes nothing yet, a terminal), and
// an interrupt must not wait for it (review: Ctrl-C waited for the
// producer's end). The goroutine is left blocked; the process ends.
func cancelable(ctx context.Context, r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, r)
		pw.CloseWithError(err) // nil: EOF
	}()
	// The writing end closed with ctx's error: the engine's read gets
	// it (an interruption, said as such), even while the copy waits.
	context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
	return pr
}

// sendStdin is `kerf send - HOST/PATH`: standard input stored as PATH.
func sendStdin(c *cli.Context, sources []string, addr, rdir string) error {
	dir, name, err := checkSendStdin(c, sources, rdir)
	if err != nil {
		return err
	}
	cl, cfg, err := dialConfig(c, addr)
	if err != nil {
		return err
	}
	defer cl.Close()
	rep := newSendReporter(c, -1)
	rep.fromStdin = true
	cl.Session().SetEvents(rep.event)
	rep.channel = cl.DataChannel
	if isRemoteDir(dir) {
		if cfg.Classic {
			defer classicDirBack(c.Context, cl)()
		}
		if err := makeAndEnter(c.Context, cl, dir, cfg.Classic); err != nil {
			return err
		}
	}
	list := stdinList(c.Context, sources[0], name)
	for f := range list.All {
		rep.listed(f)
	}
	err = kermit.SendParallelWith(c.Context, []*kermit.Session{cl.Session()}, list, kermit.SendOptions{})
	if err != nil {
		err = &stdinSendError{err}
	}
	return rep.end(err, false)
}
