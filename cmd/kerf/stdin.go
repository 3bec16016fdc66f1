package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
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
const stdinNotResumable = "standard input cannot be resumed: send it again whole (what the receiver got stays there, hidden, until that name is sent again)"

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

// checkSendStdin refuses what standard input cannot do, before any dial,
// and returns the name it is stored under (the target's last element)
// and the remote directory it goes into.
func checkSendStdin(c *cli.Context, sources []string, rdir string) (dir, name string, err error) {
	switch {
	case len(sources) != 1:
		return "", "", usageErr("- (standard input) is sent alone, as one file")
	case c.Bool("recursive"):
		return "", "", usageErr("-r: standard input is one file, not a tree")
	case c.Bool("resume"):
		return "", "", usageErr("--resume: standard input cannot be read again from where an earlier transfer stopped")
	case c.Bool(removeSourceFlag.Name):
		return "", "", usageErr("--remove-source-files: standard input is no file to remove")
	case c.String("password-file") == "-" || c.String("password-file") == "/dev/stdin":
		return "", "", usageErr("--password-file %s: standard input is the file; give the password in KERF_PASSWORD or a file, or log in with a key", c.String("password-file"))
	}
	name = path.Base(rdir)
	if rdir == "" || strings.HasSuffix(rdir, "/") || name == "." || name == ".." || name == "/" {
		return "", "", usageErr("- (standard input) needs a name to be stored as: HOST[:PORT]/NAME or HOST[:PORT]/DIR/NAME")
	}
	if !c.Bool("classic") {
		if f := dataFlagGiven(c); f != "" {
			return "", "", usageErr("- (standard input) goes in the control connection's packets, as with --in-band: --%s has nothing to do", f)
		}
		if err := c.Set("in-band", "true"); err != nil {
			return "", "", err
		}
	}
	return path.Dir(rdir), name, nil
}

// stdinList is the send's one file: standard input under name, read
// until ctx ends.
func stdinList(ctx context.Context, name string) kermit.FileList {
	return kermit.ListOf([]kermit.OutgoingFile{{
		Name: name, Size: -1,
		Open: func() (kermit.FileReader, error) { return stdinFile{cancelable(ctx, os.Stdin)}, nil },
	}})
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
		if err := makeAndEnter(c.Context, cl, dir); err != nil {
			return err
		}
	}
	list := stdinList(c.Context, name)
	for f := range list.All {
		rep.listed(f)
	}
	err = kermit.SendParallelWith(c.Context, []*kermit.Session{cl.Session()}, list, kermit.SendOptions{})
	if err != nil {
		err = &stdinSendError{err}
	}
	return rep.end(err, false)
}
