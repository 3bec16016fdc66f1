package filestore

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"math"
	"os"
	"slices"
	"unsafe"
)

// nameList is names, each with a type, held compactly and given back
// sorted: a directory's entries (dirList), or the finds of a listing of
// several names. The names are kept in a few large chunks, with a
// fixed-size slot each for where its name is and its type. (QA w: a
// directory of 500,000 entries read as fs.DirEntry values, each keeping
// its details once they were asked for, took a server 346 MB to list
// and 434 MB to match a wildcard in; a slot is 12 bytes beside the
// name, and the chunks, unlike one growing buffer, are never copied or
// left half empty.)
//
// Past spillAt bytes held, the names go to a file, sorted, a run at a
// time, and are merged from there as they are given back: what a list
// costs in memory is then bounded whatever the number of its names (the
// issue's "server RSS bounded by configuration, independent of file
// count"; held, about 90 bytes a name, 40 MB for 500,000).
//
// Use: add each name, finish, then all (as often as wanted), and close.
type nameList struct {
	// key is what names sort by (nil: the whole name); names of equal
	// keys keep the order they were added in.
	key func(name []byte) []byte
	rel string // the directory, for errors

	chunks     [][]byte
	chunkBytes int
	ents       []nameSlot
	n          int           // names in all
	spill      *os.File      // the runs, once there are any
	spillOff   int64         // where the next run goes
	w          *bufio.Writer // writes runs
	runs       []int64       // where each run ends in spill
	noSpill    bool          // no file could be had for the runs: all stay here
	err        error         // a run that could not be read back
}

type nameSlot struct {
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

// spillAt is how many bytes of names and slots a list holds before it
// writes them out as a run: 8 MiB, about 100,000 names. A variable for
// tests.
var spillAt = 8 << 20

// SpillDir is where the runs of big lists go (a file with no name, gone
// with the list); empty, os.TempDir(). A server sets it to its state
// directory, on disk where /tmp may be memory. Set it before any list is
// read.
var SpillDir string

func spillDir() string { return cmp.Or(SpillDir, os.TempDir()) }

// errDirTooBig: a directory of more names than a list's slots reach
// (64 GiB of them), or a name longer than 64 KiB.
var errDirTooBig = errors.New("directory too big to list")

func (l *nameList) add(name []byte, typ fs.FileMode) error {
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
		l.chunkBytes += cap(l.chunks[last])
	}
	c := l.chunks[last]
	l.ents = append(l.ents, nameSlot{pos: uint32(len(c)), chunk: uint16(last), n: uint16(len(name)), typ: typ})
	l.chunks[last] = append(c, name...)
	l.n++
	if !l.noSpill && l.chunkBytes+cap(l.ents)*int(unsafe.Sizeof(nameSlot{})) >= spillAt {
		return l.spillRun()
	}
	return nil
}

func (l *nameList) tooBig() error {
	return &fs.PathError{Op: "readdirent", Path: l.rel, Err: errDirTooBig}
}

func (l *nameList) bytes(s nameSlot) []byte {
	return l.chunks[s.chunk][s.pos : s.pos+uint32(s.n)]
}

// sortKey is what name sorts by.
func (l *nameList) sortKey(name []byte) []byte {
	if l.key == nil {
		return name
	}
	return l.key(name)
}

func (l *nameList) sort() {
	by := func(a, b nameSlot) int { return bytes.Compare(l.sortKey(l.bytes(a)), l.sortKey(l.bytes(b))) }
	if l.key == nil {
		slices.SortFunc(l.ents, by) // (a directory's names are unique)
	} else {
		slices.SortStableFunc(l.ents, by)
	}
}

// finish ends the adding: the names held are sorted, or, once there are
// runs, written out as the last one, so that all are merged alike.
func (l *nameList) finish() error {
	if l.spill == nil {
		l.sort()
		return nil
	}
	err := l.spillRun()
	l.chunks, l.ents, l.w = nil, nil, nil
	return err
}

// spillRun writes the names held, sorted, to the spill file as a run,
// and lets go of them. A run is records of a type (4 bytes), a name's
// length (2) and the name. When no file can be had, the names stay here,
// as they did before runs.
func (l *nameList) spillRun() error {
	if l.spill == nil {
		f, err := spillFile(spillDir())
		if err != nil {
			l.noSpill = true
			return nil
		}
		l.spill = f
	}
	l.sort()
	if l.w == nil {
		l.w = bufio.NewWriterSize(nil, 64<<10)
	}
	w := l.w
	w.Reset(io.NewOffsetWriter(l.spill, l.spillOff))
	var rec [6]byte
	end := l.spillOff
	for _, e := range l.ents {
		binary.LittleEndian.PutUint32(rec[:4], uint32(e.typ))
		binary.LittleEndian.PutUint16(rec[4:], e.n)
		w.Write(rec[:])
		w.Write(l.bytes(e))
		end += int64(len(rec)) + int64(e.n)
	}
	if err := w.Flush(); err != nil {
		// The run's place stays where it began: a later run written
		// there must not take this one's half-written bytes for its
		// own (review 50: read back as empty names).
		return &fs.PathError{Op: "readdirent", Path: l.rel, Err: fmt.Errorf("keeping the names of a big directory in %s: %w", spillDir(), err)}
	}
	l.spillOff = end
	l.runs = append(l.runs, l.spillOff)
	// The chunks go (the next run makes its own, growing again), the
	// slots' room stays.
	l.chunks, l.chunkBytes, l.ents = nil, 0, l.ents[:0]
	return nil
}

// namedSpillFile is a spill file made under a name and removed at once:
// only the list has it from then on.
func namedSpillFile(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, ".kerf-names-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Len is the number of names.
func (l *nameList) Len() int { return l.n }

// all yields the names in order with their types; a name's bytes are
// good until the next is yielded. A run that cannot be read back ends
// it early, and readErr then says why.
func (l *nameList) all() iter.Seq2[[]byte, fs.FileMode] {
	return func(yield func([]byte, fs.FileMode) bool) {
		if l.spill == nil {
			for _, s := range l.ents {
				if !yield(l.bytes(s), s.typ) {
					return
				}
			}
			return
		}
		l.merge(yield)
	}
}

// readErr is why all ended early, if it did.
func (l *nameList) readErr() error { return l.err }

// runReader reads one run back, a name ahead.
type runReader struct {
	r    *bufio.Reader
	idx  int // the run's place: of equal keys, an earlier run's go first
	name []byte
	typ  fs.FileMode
}

func (r *runReader) next() (bool, error) {
	var rec [6]byte
	if _, err := io.ReadFull(r.r, rec[:]); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, err
	}
	r.typ = fs.FileMode(binary.LittleEndian.Uint32(rec[:4]))
	n := int(binary.LittleEndian.Uint16(rec[4:]))
	r.name = slices.Grow(r.name[:0], n)[:n]
	_, err := io.ReadFull(r.r, r.name)
	return true, err
}

// merge yields the runs' names in order: the least of the runs' heads
// each time, from a heap of them.
func (l *nameList) merge(yield func([]byte, fs.FileMode) bool) {
	var heads []*runReader
	less := func(i, j int) bool {
		if c := bytes.Compare(l.sortKey(heads[i].name), l.sortKey(heads[j].name)); c != 0 {
			return c < 0
		}
		return heads[i].idx < heads[j].idx
	}
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(heads) {
				return
			}
			if c+1 < len(heads) && less(c+1, c) {
				c++
			}
			if !less(c, i) {
				return
			}
			heads[i], heads[c] = heads[c], heads[i]
			i = c
		}
	}
	fail := func(err error) {
		l.err = &fs.PathError{Op: "readdirent", Path: l.rel, Err: fmt.Errorf("reading back the names of a big directory: %w", err)}
	}
	start := int64(0)
	for i, end := range l.runs {
		r := &runReader{r: bufio.NewReaderSize(io.NewSectionReader(l.spill, start, end-start), 16<<10), idx: i}
		start = end
		ok, err := r.next()
		if err != nil {
			fail(err)
			return
		}
		if ok {
			heads = append(heads, r)
		}
	}
	for i := len(heads)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(heads) > 0 {
		h := heads[0]
		if !yield(h.name, h.typ) {
			return
		}
		ok, err := h.next()
		if err != nil {
			fail(err)
			return
		}
		if !ok {
			heads[0] = heads[len(heads)-1]
			heads = heads[:len(heads)-1]
		}
		down(0)
	}
}

// close lets go of the runs, if any.
func (l *nameList) close() {
	if l.spill != nil {
		l.spill.Close()
		l.spill = nil
	}
}
