package filestore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"slices"

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
		return &dirList{dir: &openDir{root: root, rel: rel, closed: true}}, err
	}
	l := &dirList{dir: &openDir{f: f, root: root, rel: rel}}
	err = readDirEntries(l.dir, func(name []byte, typ fs.FileMode) error {
		if keep != nil && !keep(string(name)) {
			return nil
		}
		return l.add(name, typ)
	})
	slices.SortFunc(l.ents, func(a, b dirSlot) int { return bytes.Compare(l.bytes(a), l.bytes(b)) })
	return l, err
}

// dirList is a directory's entries, sorted by name, held compactly: the
// names in a few large chunks, a fixed-size slot each for where its name
// is and its type. (QA w: a directory of 500,000 entries read as
// fs.DirEntry values, each keeping its details once they were asked for,
// took a server 346 MB to list and 434 MB to match a wildcard in; a slot
// is 12 bytes beside the name, and the chunks, unlike one growing
// buffer, are never copied or left half empty.)
type dirList struct {
	dir    *openDir
	chunks [][]byte
	ents   []dirSlot
}

type dirSlot struct {
	pos   uint32
	chunk uint16
	n     uint16
	typ   fs.FileMode
}

// Chunks of names grow from firstChunk (a small directory costs little)
// to maxChunk.
const (
	firstChunk = 4 << 10
	maxChunk   = 1 << 20
)

// errDirTooBig: a directory of more names than a list's slots reach
// (64 GiB of them), or a name longer than 64 KiB.
var errDirTooBig = errors.New("directory too big to list")

func (l *dirList) add(name []byte, typ fs.FileMode) error {
	if len(name) > math.MaxUint16 {
		return l.tooBig()
	}
	last := len(l.chunks) - 1
	if last < 0 || len(l.chunks[last])+len(name) > cap(l.chunks[last]) {
		size := firstChunk
		if last >= 0 {
			size = min(2*cap(l.chunks[last]), maxChunk)
		}
		if len(l.chunks) > math.MaxUint16 {
			return l.tooBig()
		}
		l.chunks = append(l.chunks, make([]byte, 0, max(size, len(name))))
		last++
	}
	c := l.chunks[last]
	l.ents = append(l.ents, dirSlot{pos: uint32(len(c)), chunk: uint16(last), n: uint16(len(name)), typ: typ})
	l.chunks[last] = append(c, name...)
	return nil
}

func (l *dirList) tooBig() error {
	return &fs.PathError{Op: "readdirent", Path: l.dir.rel, Err: errDirTooBig}
}

func (l *dirList) bytes(s dirSlot) []byte {
	return l.chunks[s.chunk][s.pos : s.pos+uint32(s.n)]
}

// Len is the number of entries.
func (l *dirList) Len() int { return len(l.ents) }

// Name is entry i's name.
func (l *dirList) Name(i int) string { return string(l.bytes(l.ents[i])) }

// Entry is entry i, its details read when asked for (once an entry).
func (l *dirList) Entry(i int) fs.DirEntry {
	return &lazyEntry{dir: l.dir, name: l.Name(i), typ: l.ents[i].typ}
}

// close lets go of the directory: details asked for from then on are
// read through the root.
func (l *dirList) close() { l.dir.close() }

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
		ents.close()
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
	for i := range ents.Len() {
		// The entry is made as it is walked, and what its Info reads
		// goes with it: a directory of a million entries holds only
		// their names and types meanwhile.
		e := ents.Entry(i)
		if err := walkDirFrom(root, path.Join(name, e.Name()), e, fn, depth+1); err != nil {
			if err == fs.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}

// nameArena is names held as compactly as dirList holds a directory's:
// a listing of several names, whose matches are sorted together.
type nameArena struct {
	names []byte
	ends  []int
}

func (a *nameArena) add(name string) {
	a.names = append(a.names, name...)
	a.ends = append(a.ends, len(a.names))
}

func (a *nameArena) Len() int { return len(a.ends) }

func (a *nameArena) bytes(i int) []byte {
	start := 0
	if i > 0 {
		start = a.ends[i-1]
	}
	return a.names[start:a.ends[i]]
}

// At is name i.
func (a *nameArena) At(i int) string { return string(a.bytes(i)) }

// sortByBase orders the names by their last element, stably (one name's
// matches stay in the order found where they tie).
func (a *nameArena) sortByBase() {
	idx := make([]int, a.Len())
	for i := range idx {
		idx[i] = i
	}
	base := func(i int) []byte {
		b := bytes.TrimSuffix(a.bytes(i), []byte("/"))
		if j := bytes.LastIndexByte(b, '/'); j >= 0 {
			return b[j+1:]
		}
		return b
	}
	slices.SortStableFunc(idx, func(x, y int) int { return bytes.Compare(base(x), base(y)) })
	var names []byte
	ends := make([]int, 0, len(idx))
	for _, i := range idx {
		names = append(names, a.bytes(i)...)
		ends = append(ends, len(names))
	}
	a.names, a.ends = names, ends
}
