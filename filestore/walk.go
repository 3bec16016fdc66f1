package filestore

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// readDir lists directory rel of root, sorted by name, as fs.ReadDir
// does, but without fs.ValidPath: os.Root.FS refuses any path that is
// not UTF-8, and a Unix name need not be (a tree written by a Latin-1
// system), so a directory so named could not be listed or walked. The
// entries' Info may read the directory: done, called once they are no
// longer wanted, lets go of it (see readDirEntries).
func readDir(root *os.Root, rel string) (ents []fs.DirEntry, done func(), err error) {
	f, err := root.Open(rel)
	if err != nil {
		return nil, func() {}, err
	}
	dir := &openDir{f: f, root: root, rel: rel}
	ents, err = readDirEntries(dir)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, dir.close, err
}

// openDir is a directory being read, which its entries' Info may read
// again while it is open, and through the root (confined, not following
// a link) once it is closed.
type openDir struct {
	f      *os.File
	root   *os.Root
	rel    string
	closed bool
}

func (d *openDir) close() {
	if !d.closed {
		d.closed = true
		d.f.Close()
	}
}

// maxOpenDepth is how many directories a walk keeps open, one a level,
// for its entries' details: deeper ones are closed once read, and their
// entries' details read through the root (a walk of a tree thousands of
// levels deep, made so on purpose, would otherwise take as many
// descriptors; review).
const maxOpenDepth = 16

// walkDir walks the tree at top in root as fs.WalkDir walks an fs.FS
// (lexical order, a directory before what it holds, fn called again
// with the error for a directory that cannot be read, fs.SkipDir and
// fs.SkipAll honoured), with readDir: names need not be UTF-8.
func walkDir(root *os.Root, top string, fn fs.WalkDirFunc) error {
	info, err := root.Stat(top)
	if err != nil {
		err = fn(top, nil, err)
	} else {
		err = walkDirFrom(root, top, fs.FileInfoToDirEntry(info), fn, 0)
	}
	if err == fs.SkipDir || err == fs.SkipAll {
		return nil
	}
	return err
}

func walkDirFrom(root *os.Root, name string, d fs.DirEntry, fn fs.WalkDirFunc, depth int) error {
	if err := fn(name, d, nil); err != nil || !d.IsDir() {
		if err == fs.SkipDir && d.IsDir() {
			err = nil
		}
		return err
	}
	var ents []fs.DirEntry
	var err error
	done := func() {}
	if levels(name) >= MaxDepth {
		// What it holds could have no name here (cleanName); and walked,
		// each level costs as much as those above it.
		err = fmt.Errorf("%s: %w", name, ErrTooDeep)
	} else {
		ents, done, err = readDir(root, name)
	}
	defer done()
	if depth >= maxOpenDepth {
		done()
	}
	if err != nil {
		// Second call, to report the error; entries read are still walked.
		if err = fn(name, d, err); err != nil {
			if err == fs.SkipDir && d.IsDir() {
				err = nil
			}
			return err
		}
	}
	for i, e := range ents {
		// Let go of it once walked: what its Info read stays with it,
		// and a directory of a million entries would otherwise keep all
		// of theirs until its walk ends.
		ents[i] = nil
		if err := walkDirFrom(root, path.Join(name, e.Name()), e, fn, depth+1); err != nil {
			if err == fs.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
