package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"kerf/control"
	"kerf/framing"
	"kerf/kermit"
)

// A move (--remove-source-files) onto the very directory it comes from,
// reached through a file system both machines share (the client's
// directory mounted from the server over sshfs, NFS or SMB), would save
// each file over itself and then remove it: the only copy gone (QA:
// sshfs without -o use_ino, whose invented inode numbers and cached
// attributes make the file look unchanged since it was sent). Inode
// numbers, sizes and times cannot tell on every such file system, so
// the client asks before it moves anything: it puts an empty file of a
// random name in each local directory concerned, asks the server in one
// listing which of these names it sees in the directory paired with it,
// and removes them again. One the server sees is the same directory,
// and the move is refused (docs/architecture.md, "A move onto itself").

// dirPair is a local directory and the server's directory (a name from
// the session's current directory, which may hold a GET's wildcards)
// that a transfer maps onto each other.
type dirPair struct{ local, remote string }

// probePrefix begins the names of the probe's empty files.
const probePrefix = ".kerf-probe-"

// refuseMoveOntoItself is a usage error naming the first pair that is
// one directory on both sides (sameDirs), or nil. A local directory the
// probe cannot write in is left unchecked, with a warning unless it is
// read-only to this user (then nothing in it can be removed anyway).
func refuseMoveOntoItself(ctx context.Context, cl *control.Client, pairs []dirPair) error {
	same, err := sameDirs(ctx, cl, pairs, func(p dirPair, err error) {
		if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, errReadOnly) {
			slog.Warn("--remove-source-files: cannot check whether this directory is the server's own", "dir", p.local, "err", err)
		}
	})
	if err != nil {
		return transferErr(fmt.Errorf("--remove-source-files: checking whether %s is the server's own directory: %w", pairs[0].local, err))
	}
	if len(same) == 0 {
		return nil
	}
	p := same[0]
	remote := p.remote
	if remote == "." {
		remote = "the server's directory"
	} else {
		remote = "the server's " + remote
	}
	return usageErr("--remove-source-files: %s is %s itself (a file system both share): each file would be saved over itself and then removed; nothing was moved", p.local, remote)
}

// sameDirs reports which pairs are one directory, seen from both sides.
// unchecked is told of each pair whose local directory took no probe.
// Only a lost link (or ctx) is an error: a server that cannot list what
// was asked has not seen the probe.
func sameDirs(ctx context.Context, cl *control.Client, pairs []dirPair, unchecked func(dirPair, error)) ([]dirPair, error) {
	markers := make(map[string]dirPair, len(pairs)) // by probe name
	var specs []string
	seen := map[dirPair]bool{}
	for _, p := range pairs {
		if seen[p] {
			continue
		}
		seen[p] = true
		name, err := putProbe(p.local)
		if err != nil {
			unchecked(p, err)
			continue
		}
		defer os.Remove(filepath.Join(p.local, name))
		markers[name] = p
		specs = append(specs, path.Join(p.remote, name))
	}
	if len(specs) == 0 {
		return nil, nil
	}
	found, err := listed(ctx, cl, specs)
	if err != nil {
		return nil, err
	}
	var same []dirPair
	for _, n := range found {
		if p, ok := markers[path.Base(n)]; ok {
			same = append(same, p)
			delete(markers, path.Base(n))
		}
	}
	return same, nil
}

// errReadOnly is a probe refused by a read-only file system.
var errReadOnly = errors.New("read-only file system")

// putProbe creates an empty file of a new random name in dir.
func putProbe(dir string) (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	name := probePrefix + hex.EncodeToString(b[:])
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, syscall.EROFS) {
			err = fmt.Errorf("%w: %w", errReadOnly, err)
		}
		return "", err
	}
	return name, f.Close()
}

// listed is the names among specs (each a directory and a probe's name)
// that the server lists: a kerf server's tree listing of them all at
// once, or else each alone as REMOTE DIRECTORY, whose free-form reply
// (a classic Kermit server's) names the file if it is there. A probe's
// random name is found in no reply that does not list it, save one that
// repeats the question, which errs on the side of keeping.
func listed(ctx context.Context, cl *control.Client, specs []string) ([]string, error) {
	if spec, ok := framing.JoinSpec(specs); ok {
		entries, err := cl.Session().ListTree(ctx, spec)
		switch {
		case err == nil:
			names := make([]string, len(entries))
			for i, e := range entries {
				names[i] = e.Name
			}
			return names, nil
		case isPeerError(err):
			if len(specs) == 1 {
				return nil, nil // not there
			}
			// One of them refused (no such directory): ask each alone.
		case !errors.Is(err, kermit.ErrNoTreeListing):
			return nil, err
		}
	}
	var names []string
	for _, s := range specs {
		text, err := cl.Generic(ctx, 'D', s)
		if isPeerError(err) {
			continue // not there
		}
		if err != nil {
			return nil, err
		}
		if strings.Contains(text, path.Base(s)) {
			names = append(names, s)
		}
	}
	return names, nil
}

// isPeerError reports whether err is the server's refusal (an E packet),
// not a lost link.
func isPeerError(err error) bool {
	var pe *kermit.PeerError
	return errors.As(err, &pe)
}

// sendProbePairs is, for the local paths a send names, each directory
// whose files go into the server's current directory under their own
// names: a file's, a tree's parent, the tree itself for "dir/." (its
// contents go, as cp -r copies them). Whatever lies under these goes
// under the same relative names there, so a tree is checked at its top.
func sendProbePairs(args []string, recursive bool) []dirPair {
	var pairs []dirPair
	for _, a := range args {
		local := filepath.Dir(filepath.Clean(a))
		if b := filepath.Base(a); recursive && (b == "." || b == "..") {
			local = a
		}
		pairs = append(pairs, dirPair{local: local, remote: "."})
	}
	return pairs
}

// getProbePairs is, for the names a get asks for, each server directory
// whose files come into dir under their own names: a name's directory,
// or the name itself for "dir/." (its contents). A GET's wildcards stay
// in them: the server matches the probe's name under each directory
// they match.
func getProbePairs(specs []string, dir string) []dirPair {
	var pairs []dirPair
	for _, s := range specs {
		remote := path.Dir(path.Clean(s))
		if b := path.Base(s); b == "." || b == ".." {
			remote = s
		}
		pairs = append(pairs, dirPair{local: dir, remote: remote})
	}
	return pairs
}

// listProbePairs is sendProbePairs for a --files-from list: each
// listed path goes under its own path there, so the directory it is
// read from (or / for an absolute one) pairs with the server's, checked
// at each top element (a directory of the list's may be a mount of its
// own).
func listProbePairs(src sendSources) []dirPair {
	var pairs []dirPair
	seen := map[dirPair]bool{}
	for i, p := range src.paths {
		name := src.names[i]
		pair := dirPair{local: p, remote: "."}
		if top, rest, deeper := strings.Cut(name, "/"); deeper {
			pair = dirPair{local: strings.TrimSuffix(p, string(filepath.Separator)+filepath.FromSlash(rest)), remote: top}
		} else if name != "" {
			pair.local = filepath.Dir(p)
		}
		if !seen[pair] {
			seen[pair] = true
			pairs = append(pairs, pair)
		}
	}
	return pairs
}
