package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// A copy of one file to a name that is not a directory takes that name,
// as with cp, scp and rsync: `kerf get host/a.txt b.txt` makes b.txt,
// `kerf send a.txt host/dir/b.txt` makes dir/b.txt. A name ending in
// "/", or one that is a directory, receives the file under its own name;
// several files, a tree or a wildcard always go into a directory (made
// if missing).

// notADirectory reports whether a refused remote cd says the path is
// missing or not a directory, so that a file may take its name; any
// other refusal (a link leading out, no permission, CD disabled) stands.
// C-Kermit says "Can't change directory" whatever the cause: taken as
// missing, or a one-file send to a new name on it always failed (QA);
// a directory it may not enter then refuses the file of its name.
func notADirectory(err error) bool {
	var pe *kermit.PeerError
	if !errors.As(err, &pe) {
		return false
	}
	m := strings.ToLower(pe.Msg)
	for _, s := range []string{"no such file", "not a directory", "not found", "does not exist", "can't change directory"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// localAsName says whether a get of specs into dest stores its one file
// as dest itself, and then returns the directory to open and the name.
func localAsName(specs []string, dest string, recursive bool) (dir, as string, ok bool) {
	if len(specs) != 1 || recursive || hasWildcard(path.Base(specs[0])) || strings.HasSuffix(dest, "/") {
		return "", "", false
	}
	if b := filepath.Base(dest); b == "." || b == ".." {
		return "", "", false
	}
	if dest == "-" {
		// Standard output, even beside a directory named "-" (QA).
		return ".", dest, true
	}
	if fi, err := os.Stat(dest); err == nil && fi.IsDir() {
		return "", "", false
	}
	return filepath.Dir(dest), filepath.Base(dest), true
}

// asNameStore stores the one file a get asked for under another name.
// The peer may send it twice (a partial found to differ is sent again
// whole); a file of another name is refused, since one was asked for.
type asNameStore struct {
	*filestore.Dir
	as      string
	sent    string // the peer's name for the file, once seen
	discard bool   // as is the null device: the bytes go nowhere
	// expect, if set, is asked of the name: a name asked for with
	// escaped wildcards takes that one file only (escape.go).
	expect func(string) error
}

func (s *asNameStore) Create(name string) (kermit.Incoming, error) {
	if err := checkExpected(s.expect, name); err != nil {
		return nil, err
	}
	if s.sent == "" {
		s.sent = name
	}
	if name != s.sent {
		return nil, fmt.Errorf("%s: refused: one file was asked for, to be stored as %s, and %s came first", name, s.as, s.sent)
	}
	if s.discard {
		return discarded{s.as}, nil
	}
	return s.Dir.Create(s.as)
}

// isNullDevice reports whether path is the null device (/dev/null, or
// another name for it): `kerf get host/big /dev/null` measures a fetch
// and checks it end to end, as `curl -o /dev/null` does, storing
// nothing (QA: it was refused, a character device in the name's place,
// after the whole file had come).
func isNullDevice(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}

// discarded is a received file that goes to the null device: every
// check is made, nothing is kept.
type discarded struct{ name string }

func (d discarded) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (d discarded) Name() string                           { return d.name }
func (d discarded) Partial() (int64, uint32, error)        { return 0, 0, nil }
func (d discarded) Truncate(int64) error                   { return nil }
func (d discarded) Commit(time.Time, fs.FileMode) error    { return nil }
func (d discarded) Abort(bool) error                       { return nil }
func (d discarded) KeepsNothing() bool                     { return true }

// oneFile reports whether a send is of one regular file.
func oneFile(files []kermit.OutgoingFile) bool {
	return len(files) == 1 && !files[0].Dir
}

// remoteAsName reports whether a send's remote path may name the file
// itself: not the top, and not ending in "/" or a dot element.
func remoteAsName(rdir string) bool {
	if rdir == "" || strings.HasSuffix(rdir, "/") {
		return false
	}
	b := path.Base(rdir)
	return b != "." && b != ".." && b != "/"
}

// checkExpected is expect's word on a name sent, nil without one.
func checkExpected(expect func(string) error, name string) error {
	if expect == nil {
		return nil
	}
	if err := expect(name); err != nil {
		return fmt.Errorf("refused: %w", err)
	}
	return nil
}
