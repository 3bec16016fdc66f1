package filestore

import (
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// readDir lists directory rel of root, sorted by name, as fs.ReadDir
// does, but without fs.ValidPath: os.Root.FS refuses any path that is
// not UTF-8, and a Unix name need not be (a tree written by a Latin-1
// system), so a directory so named could not be listed or walked. keep,
// if not nil, decides by name which entries are kept (a wildcard's
// matches); the others cost only their reading. The entries' details
// are read when asked for, through the directory while the list is
// open: close, called once they are no longer wanted, lets go of it.
// The list is returned, closed, with an error too.
func readDir(root *os.Root, rel string, keep func(name string) bool) (*dirList, error) {
	f, err := root.Open(rel)
	if err != nil {
		return &dirList{dir: &openDir{root: root, rel: rel, closed: true}, nameList: nameList{rel: rel}}, err
	}
	l := &dirList{dir: &openDir{f: f, root: root, rel: rel}, nameList: nameList{rel: rel}}
	err = readDirEntries(l.dir, func(name []byte, typ fs.FileMode) error {
		if keep != nil && !keep(string(name)) {
			return nil
		}
		return l.add(name, typ)
	})
	if ferr := l.finish(); err == nil {
		err = ferr
	}
	return l, err
}

// dirList is a directory's entries, sorted by name (a nameList), and
// the directory, open while their details may be asked for.
type dirList struct {
	nameList
	dir *openDir
}

// all yields the entries in order, each made as it is yielded: its
// details are read when asked for (once an entry). A run that cannot be
// read back ends it early, and readErr then says why.
func (l *dirList) all() iter.Seq[fs.DirEntry] {
	return func(yield func(fs.DirEntry) bool) {
		for name, typ := range l.nameList.all() {
			if !yield(&lazyEntry{dir: l.dir, name: string(name), typ: typ}) {
				return
			}
		}
	}
}

// close lets go of the directory: details asked for from then on are
// read through the root. The runs go too.
func (l *dirList) close() {
	l.dir.close()
	l.nameList.close()
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

// lazyEntry is a directory entry whose details are read when asked for.
type lazyEntry struct {
	dir  *openDir
	name string
	typ  fs.FileMode
	info fs.FileInfo
}

func (e *lazyEntry) Name() string      { return e.name }
func (e *lazyEntry) IsDir() bool       { return e.typ.IsDir() }
func (e *lazyEntry) Type() fs.FileMode { return e.typ }
func (e *lazyEntry) String() string    { return fs.FormatDirEntry(e) }

// Info reads the entry's details (not following a link), once: with
// fstatat on the directory while it is open, which is one call where
// os.Root's Lstat walks the path afresh.
func (e *lazyEntry) Info() (fs.FileInfo, error) {
	if e.info != nil {
		return e.info, nil
	}
	if e.dir.closed {
		fi, err := e.dir.root.Lstat(path.Join(e.dir.rel, e.name))
		if err != nil {
			return nil, err
		}
		e.info = fi
		return fi, nil
	}
	var st unix.Stat_t
	if err := ignoringEINTR(func() error {
		return unix.Fstatat(int(e.dir.f.Fd()), e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: path.Join(e.dir.rel, e.name), Err: err}
	}
	e.info = statInfo{name: e.name, st: st}
	return e.info, nil
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
	var ents *dirList
	var err error
	if levels(name) >= MaxDepth {
		// What it holds could have no name here (cleanName); and walked,
		// each level costs as much as those above it.
		ents, err = &dirList{dir: &openDir{closed: true}}, fmt.Errorf("%s: %w", name, ErrTooDeep)
	} else {
		ents, err = readDir(root, name, nil)
	}
	defer ents.close()
	if depth >= maxOpenDepth {
		ents.dir.close() // (its runs, if any, stay until the walk leaves it)
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
	for e := range ents.all() {
		// The entry is made as it is walked, and what its Info reads
		// goes with it: a directory of a million entries holds only
		// their names and types meanwhile.
		if err := walkDirFrom(root, path.Join(name, e.Name()), e, fn, depth+1); err != nil {
			if err == fs.SkipDir {
				return nil
			}
			return err
		}
	}
	if err := ents.readErr(); err != nil {
		if err = fn(name, d, err); err != nil && err != fs.SkipDir {
			return err
		}
	}
	return nil
}
