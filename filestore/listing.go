// Directory listings (REMOTE DIRECTORY, and the tree listing of a resume).

package filestore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"kerf/framing"
	"kerf/kermit"
)

// List describes the entries matching spec (a directory or a pattern),
// one per line: type and permissions, size, modification time, name.
func (d *Dir) List(spec string) (string, error) { return d.listString(spec, kermit.ListForm{}) }

// ListLiteral is List of the one entry name names as it is, whatever
// wildcard characters it has (kermit.LiteralFS: a client's escaped name).
func (d *Dir) ListLiteral(name string) (string, error) {
	return d.listString(name, kermit.ListForm{Literal: true})
}

func (d *Dir) listString(spec string, form kermit.ListForm) (string, error) {
	var b strings.Builder
	if err := d.ListTo(spec, form, &b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// ListTo writes List's lines (ListLiteral's, to the nanosecond, as form
// asks) to w as it makes them (kermit.ListWriter), so that the listing of a
// directory of any size is never held: the server holds its entries'
// names (dirList), sorted, and the line being written (QA w: one ls of
// 500,000 entries took a server 346 MB, eight at once 3.1 GB). An error
// of the whole (nothing matches, a name that does not exist) comes
// before any line; an entry that cannot be looked at ends the listing
// with its error where it comes.
func (d *Dir) ListTo(spec string, form kermit.ListForm, w io.Writer) error {
	if strings.TrimSpace(spec) == "" {
		spec = "."
	}
	appendLine := framing.AppendListingLine
	if form.Exact {
		appendLine = framing.AppendListingLineExact
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	var line []byte
	emit := func(name string, fi fs.FileInfo) error {
		line = appendLine(line[:0], listingEntry(name, fi))
		_, err := bw.Write(line)
		return err
	}
	// Names and patterns as for GET (braces, "link/" and all); one name
	// that is a directory lists what it holds. One name's entries come
	// in order (one directory's, sorted); several names' are sorted
	// together, by their names alone (sortedNames).
	var (
		first *specName // held until a second says it is no lone directory
		only  specName  // the first of several names' finds
		seen  int
		many  *nameList
		found int // names several names found (each once)
		werr  error
	)
	defer func() {
		if many != nil {
			many.close() // (its runs, if it has any and was not listed)
		}
	}()
	err := d.eachSpecName(spec, form.Literal, func(n specName, alone bool) bool {
		seen++
		switch {
		case !alone:
			// Of several names: a pattern's that matched nothing is
			// left out if others did; any other error is the listing's.
			if n.nomatch {
				if first == nil {
					first = &n
				}
				return true
			}
			if n.err != nil {
				werr = n.err
				return false
			}
			if found++; found == 1 {
				only = n
			}
			if many == nil {
				many = &nameList{key: baseName}
			}
			if n.fi.IsDir() {
				// (Followed, if "link/": looked at again so.)
				werr = many.add([]byte(n.rel+"/"), 0)
			} else {
				werr = many.add([]byte(n.rel), 0)
			}
			return werr == nil
		case n.err != nil:
			werr = n.err
			return false
		case seen == 1:
			first = &n
			return true
		case seen == 2:
			if werr = emit(path.Base(first.rel), first.fi); werr != nil {
				return false
			}
		}
		werr = emit(path.Base(n.rel), n.fi)
		return werr == nil
	})
	if err == nil {
		err = werr
	}
	switch {
	case err != nil:
	case found == 1 && seen == 1 && !only.pattern && only.fi.IsDir():
		// One directory named more than once ("p p"): what it holds,
		// as when named once.
		err = d.listDir(only.rel, emit)
	case many != nil:
		err = d.listSorted(many, emit)
	case seen == 0:
		// Nothing at all: said, as by GET and REMOTE DELETE, not an
		// empty listing (QA: a script's `kerf ls host/in/*.csv`
		// succeeded with no files there).
		err = fmt.Errorf("filestore: no files match %s", spec)
	case first != nil && first.nomatch:
		err = first.err // of several names, none matched
	case seen == 1 && !first.pattern && first.fi.IsDir():
		err = d.listDir(first.rel, emit)
	case seen == 1:
		err = emit(path.Base(first.rel), first.fi)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr // (else what was listed goes before the error)
	}
	return err
}

// listSorted emits the entries names holds, sorted by their last
// element, each as it is now (one gone since is passed over).
func (d *Dir) listSorted(names *nameList, emit func(string, fs.FileInfo) error) error {
	defer names.close()
	if err := names.finish(); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	for name := range names.all() {
		rel := string(name)
		lstat := d.lstatAt
		if strings.HasSuffix(rel, "/") {
			rel, lstat = strings.TrimSuffix(rel, "/"), d.root.Stat
		}
		fi, err := lstat(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("filestore: %w", err)
		}
		if err := emit(path.Base(rel), fi); err != nil {
			return err
		}
	}
	if err := names.readErr(); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	return nil
}

// baseName is name's last element ("a/b/" gives "b"): several names'
// finds are listed in its order.
func baseName(name []byte) []byte {
	b := bytes.TrimSuffix(name, []byte("/"))
	if j := bytes.LastIndexByte(b, '/'); j >= 0 {
		return b[j+1:]
	}
	return b
}

// lstatAt is os.Root's Lstat of rel through its directory's cached
// handle: one fstatat, where the root's walks each element afresh
// (review: a listing of several names took twice as long).
func (d *Dir) lstatAt(rel string) (fs.FileInfo, error) {
	dir, base := splitRel(rel)
	if base == "" || base == "." || base == ".." {
		return d.root.Lstat(rel)
	}
	h, err := d.openDir(dir, false)
	if err != nil {
		return nil, err
	}
	defer d.putDir(h)
	st, err := h.lstat(d, base)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return statInfo{name: base, st: st}, nil
}

// listDir emits the entries of directory rel, in order, each looked at
// as it is emitted.
func (d *Dir) listDir(rel string, emit func(string, fs.FileInfo) error) error {
	ents, err := readDir(d.root, rel, nil)
	defer ents.close()
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	for e := range ents.all() {
		// Partial files are listed (their owner may want them gone:
		// Remove takes them), though GET never serves one.
		info, err := e.Info()
		switch {
		case err == nil:
			if err := emit(e.Name(), info); err != nil {
				return err
			}
		case !errors.Is(err, fs.ErrNotExist): // (gone: passed over)
			return fmt.Errorf("filestore: %w", asNamed(err, path.Join(rel, e.Name())))
		}
	}
	if err := ents.readErr(); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	return nil
}

// listingEntry is fi's listing line under name.
func listingEntry(name string, fi fs.FileInfo) framing.ListingEntry {
	return framing.ListingEntry{Mode: fi.Mode(), Size: fi.Size(), ModTime: fi.ModTime(), Name: name}
}

// HasWhole reports whether the tree has the regular file e names, with
// e's size, modification time (framing.SameModTimeWithin
// Dir.ModifyWindow) and permission bits: a resumed GET need not fetch it
// (kermit.GetOptions.Skip).
func (d *Dir) HasWhole(e framing.ListingEntry) bool {
	if d.Flat || !e.Mode.IsRegular() {
		return false
	}
	rel, err := d.resolve(e.Name)
	if err != nil {
		return false
	}
	dir, base := splitRel(rel)
	// Through the directory's cached handle: os.Root's Lstat of a path
	// opens and closes each directory on the way, twice a file here
	// (QA w: a resume of a finished tree of 1M empty files took longer
	// than fetching it; 2 openat and 2 close a file more).
	h, err := d.openDir(dir, false)
	if err != nil {
		return false
	}
	defer d.putDir(h)
	if h.exists(d, TempName(base)) {
		return false // a leftover partial: the per-file check removes it
	}
	st, err := h.lstat(d, base)
	if err != nil {
		return false
	}
	fi := statInfo{st: st}
	return fi.Mode().IsRegular() && e.MatchesWithin(fi.Size(), fi.ModTime(), fi.Mode(), d.ModifyWindow)
}

// ListTree writes to w the listing lines (as List writes them) of what
// spec names and, for each directory among them, of everything under
// it, named by their paths from the current directory as spec gives
// them ("photos" lists "photos", "photos/a.jpg" and so on), a directory
// before what it holds. Links are listed, never followed. One name that
// does not exist is an error, as for List; of several, those that do
// not exist are left out, and so is what is in a directory that cannot
// be read: the listing says what is there, for a sender's quick check
// (protocol.md §6, item 7), where a missing entry only means the file
// is sent; with form.Problems, such a directory gets a problem line
// (framing.AppendListingProblem) after its own, for a listing shown to
// a user. With form.Ino, each line carries the entry's inode number
// (framing.AppendListingLineIno), for a peer that tells its own files
// by them (kermit's capas4Inodes).
func (d *Dir) ListTree(spec string, form kermit.TreeForm, w io.Writer) error {
	return d.listTree(spec, w, false, form)
}

// ListTreeLiteral is ListTree of the one entry name names as it is
// (kermit.LiteralFS).
func (d *Dir) ListTreeLiteral(name string, form kermit.TreeForm, w io.Writer) error {
	return d.listTree(name, w, true, form)
}

func (d *Dir) listTree(spec string, w io.Writer, literal bool, form kermit.TreeForm) error {
	if strings.TrimSpace(spec) == "" {
		spec = "."
	}
	var line []byte
	problem := func(name string, err error) error {
		if !form.Problems {
			return nil
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the name is the line's own
		}
		line = framing.AppendListingProblem(line[:0], framing.ListingProblem{Name: name, Cause: err.Error()})
		_, err = w.Write(line)
		return err
	}
	emit := func(name string, fi fs.FileInfo) error {
		e := listingEntry(name, fi)
		if form.Ino {
			e.Ino = kermit.StatusOf(fi).Ino
			line = framing.AppendListingLineIno(line[:0], e)
		} else {
			line = framing.AppendListingLineExact(line[:0], e)
		}
		_, err := w.Write(line)
		return err
	}
	pats := []string{spec}
	if !literal {
		pats = d.specPatterns(spec)
	}
	for _, pat := range pats {
		rel, err := d.resolve(pat)
		if err != nil {
			return err
		}
		// Each entry under its name from the current directory: the
		// pattern's own directory part and the entry's last element.
		dir := path.Dir(path.Clean(pat)) // "photos/." is photos
		each := func(n specName) error {
			top := path.Join(dir, path.Base(n.rel))
			if rel == d.cwd {
				top = "."
			}
			if n.err != nil {
				// A match that cannot be looked at (its directory may
				// be read, not searched): the listing's error, as the
				// whole request's was before a match came alone.
				return n.err
			}
			if !n.fi.IsDir() {
				if err := emit(top, n.fi); err != nil {
					return err
				}
				// With its partial, if one is left beside it, as a
				// directory's walk lists them: a resuming sender sends
				// a file whole here but for one, so that the receiver's
				// check removes it (QA o: left for ever after a cut
				// replacement).
				pdir, pbase := splitRel(n.rel)
				part := TempName(pbase)
				if fi, err := d.root.Lstat(path.Join(pdir, part)); err == nil && fi.Mode().IsRegular() {
					if err := emit(path.Join(path.Dir(top), part), fi); err != nil {
						return err
					}
				}
				return nil
			}
			nameOf := func(p string) string {
				if p == n.rel {
					return top
				}
				if n.rel == "." {
					return path.Join(top, p)
				}
				return path.Join(top, strings.TrimPrefix(p, n.rel+"/"))
			}
			unsearched := "" // the directory last said unsearchable
			return walkDir(d.root, n.rel, func(p string, de fs.DirEntry, err error) error {
				if err != nil {
					if de == nil {
						return fs.SkipDir // gone since it was matched
					}
					// An unreadable directory: listed, not its contents.
					if perr := problem(nameOf(p), err); perr != nil {
						return perr
					}
					if p == n.rel {
						return fs.SkipDir
					}
					return nil
				}
				fi, err := de.Info()
				if errors.Is(err, fs.ErrNotExist) {
					return nil // gone since it was read
				}
				if err != nil {
					// Read but not searched (mode 0600, say): its
					// entries cannot be looked at, which is said once
					// for the directory, as for one not read at all
					// (QA r: shown as empty, exit 0).
					if parent := path.Dir(p); parent != unsearched {
						unsearched = parent
						if perr := problem(nameOf(parent), err); perr != nil {
							return perr
						}
					}
					// Nothing under it can be looked at either: not
					// entered, if it is a directory (review: a problem
					// line for each of its subdirectories).
					if de.IsDir() {
						return fs.SkipDir
					}
					return nil
				}
				name := nameOf(p)
				if name == "." {
					return nil // the current directory itself: its contents follow
				}
				return emit(name, fi)
			})
		}
		var werr error
		err = d.eachMatch(rel, literal, func(n specName) bool {
			werr = each(n)
			return werr == nil
		})
		if err != nil {
			if len(pats) == 1 || errors.Is(err, path.ErrBadPattern) {
				return err
			}
			continue // not there
		}
		if werr != nil {
			return werr
		}
	}
	return nil
}
