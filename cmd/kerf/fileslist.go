package main

import (
	"bytes"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
)

// A send's --files-from: the files to send named in a list (a manifest,
// find's output), as rsync's --files-from, tar's -T and C-Kermit's SEND
// /LISTFILE take them. Each listed path keeps its path under the
// destination (a/b/c.txt goes to DEST/a/b/c.txt), since a list picks
// files out of a tree and the tree's shape is what it keeps.

var filesFromFlag = &cli.StringFlag{Name: "files-from", Usage: "send the paths listed in `FILE`, one a line (- reads standard input), each under its own path (a/b.txt goes to DEST/a/b.txt, as with rsync's --files-from and tar -T): relative ones from the one local directory given, if any (default: this one), an absolute one from where it is, its leading / dropped; a listed directory is made there, and with -r sent whole; empty lines are skipped, and a CR before a line's LF dropped"}

var from0Flag = &cli.BoolFlag{Name: "from0", Usage: "entries of --files-from end with a NUL byte, not a line end (find -print0), so a name with a line end is read whole (a kerf receiver still refuses it, as it refuses every control character in a name)"}

// readFilesFrom reads the list of --files-from: "-" is standard input.
func readFilesFrom(name string, stdin io.Reader, zero bool) ([]string, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, usageErr("--files-from %s: %v", name, err)
	}
	sep := byte('\n')
	if zero {
		sep = 0
	} else {
		// A list saved by a Windows editor may begin with a byte order
		// mark, which no name begins with.
		data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	}
	var entries []string
	for line := range bytes.SplitSeq(data, []byte{sep}) {
		if !zero {
			line = bytes.TrimSuffix(line, []byte{'\r'})
		}
		if len(line) > 0 {
			entries = append(entries, string(line))
		}
	}
	return entries, nil
}

// listedSources is what the entries of a --files-from list name: each
// read from dir (an absolute one from where it is) and sent under its
// path cleaned, without a leading "/". An entry that climbs out of dir
// ("../x") has no name under the destination: a usage error, naming it,
// before anything is sent.
//
// A path listed twice goes once. Two paths of one name (an absolute
// entry and a relative one) have their top element in src.clash, for
// the walk to refuse the second; without -r nothing else can give a
// name twice, so the walk remembers no other names (overlappingTops).
func listedSources(dir string, entries []string) (sendSources, error) {
	src := sendSources{paths: make([]string, 0, len(entries)), names: make([]string, 0, len(entries))}
	named := make(map[string]string, len(entries)) // name: path
	for i, e := range entries {
		rel := path.Clean(filepath.ToSlash(e))
		local := filepath.Join(dir, filepath.FromSlash(rel))
		if filepath.IsAbs(e) {
			local = filepath.Clean(e)
			rel = strings.TrimLeft(rel, "/")
			if rel == "" {
				rel = "."
			}
		}
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return sendSources{}, usageErr("--files-from: entry %d (%s) is outside the directory it is read from (%s): list paths under it, or give a directory above them before the destination", i+1, printable(e), printable(dir))
		}
		if rel == "." {
			rel = "" // the directory itself: with -r its contents
		}
		if first, ok := named[rel]; ok {
			if first == local {
				continue
			}
			if src.clash == nil {
				src.clash = map[string]bool{}
			}
			top, _, _ := strings.Cut(rel, "/")
			src.clash[top] = true
		} else {
			named[rel] = local
		}
		src.paths, src.names = append(src.paths, local), append(src.names, rel)
	}
	return src, nil
}

// filesFromSources is the sources of a send with --files-from, whose
// arguments before the destination are at most one directory, that the
// list's relative paths are read from. An empty list is no error: a
// script's list of what is new may be empty, and nothing is sent (as
// rsync and tar -T do).
func filesFromSources(c *cli.Context, locals []string) (sendSources, error) {
	if len(locals) > 1 {
		return sendSources{}, usageErr("with --files-from, give at most one local directory (where the list's relative paths are read from); %d given", len(locals))
	}
	dir := "."
	if len(locals) == 1 {
		dir = locals[0]
		if fi, err := os.Stat(dir); err != nil {
			return sendSources{}, usageErr("--files-from: %v", err)
		} else if !fi.IsDir() {
			return sendSources{}, usageErr("--files-from: %s is not a directory (the list's paths are read from it)", printable(dir))
		}
	}
	entries, err := readFilesFrom(c.String(filesFromFlag.Name), c.App.Reader, c.Bool(from0Flag.Name))
	if err != nil {
		return sendSources{}, err
	}
	return listedSources(dir, entries)
}

// sendSourcesOf is what a send's local arguments name: themselves, or
// with --files-from the list's entries, read from the one directory
// given. none: the list is empty, which a note has said (nothing to
// send, and no failure).
func sendSourcesOf(c *cli.Context, locals []string) (src sendSources, none bool, err error) {
	if !c.IsSet(filesFromFlag.Name) {
		if c.IsSet(from0Flag.Name) {
			return sendSources{}, false, usageErr("--from0 is for --files-from")
		}
		return sendSources{paths: locals}, false, nil
	}
	if src, err = filesFromSources(c, locals); err != nil {
		return sendSources{}, false, err
	}
	if len(src.paths) == 0 {
		clientLogger(c).Warn("--files-from lists no files: nothing sent", "list", c.String(filesFromFlag.Name))
		return src, true, nil
	}
	return src, false, nil
}
