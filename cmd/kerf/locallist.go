package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"kerf/filestore"
	"kerf/kermit"
)

// sendSources is what a send names: local paths, and for a
// --files-from list the name each goes under.
type sendSources struct {
	paths []string
	// names, if not nil, are the paths' names (slash-separated, ""
	// for the list's directory itself); else a path goes under its base
	// name, as scp names it.
	names []string
	// clash are the top elements of names that two paths of the list
	// give (listedSources).
	clash map[string]bool
}

// nameOf says what path i is sent as: a file's name; a tree's top
// ("" for the contents of "dir/." or of a list's directory); and the
// name --exclude is matched against ("" for none).
func (src sendSources) nameOf(i int) (name, top, exName string) {
	if src.names != nil {
		n := src.names[i]
		return n, n, n
	}
	a := src.paths[i]
	name, exName = filepath.Base(a), filepath.Base(filepath.Clean(a))
	top = exName
	if name == "." || name == ".." {
		top = "" // the contents
	}
	if exName == "." || exName == ".." {
		exName = ""
	}
	return name, top, exName
}

// localSkip is a file a local walk passed over (a FIFO, a link to a
// directory), and why.
type localSkip struct{ path, why string }

// keepListed is how many entries a send's listing keeps in memory; a
// larger tree is walked again as it is sent (localList), so that the
// client's memory does not grow with the files it sends. A variable for
// tests.
var keepListed = 50_000

// maxReasons is how many reasons the error of a send with nothing to
// send gives, the rest counted.
const maxReasons = 10

// localList is what a send's command line names: its entries, or, past
// keepListed of them, a walk of them again; and what the first walk
// counted.
type localList struct {
	src       sendSources
	recursive bool
	ex        kermit.Exclusions
	overlap   map[string]bool // top elements named by more than one path (walkLocal)
	// sized: the walk looks at every file (else its open does; bytes is
	// then of the files named on the command line only).
	sized bool
	// files are the entries in order, if there are at most keepListed
	// (nil: walked again).
	files   []kermit.OutgoingFile
	entries int   // entries, directories too
	regular int   // files (not directories) among them
	bytes   int64 // the files' sizes
	// ctx, if set, stops a walk again (interrupted, the files it did
	// not reach are counted, not named: stoppedEarly, pulled).
	ctx          context.Context
	stoppedEarly bool
	pulled       int // files (not directories) the send took from the list, Late's too
	// dirs are the directories (walked again: several sessions make
	// them before any file, and a send keeps them for their attributes
	// at its end anyway).
	dirs    []kermit.OutgoingFile
	skipped []localSkip
}

// listLocal lists what args name for a send, with scp's naming: a
// directory sent with -r keeps its own name as the top, except "." and
// ".." (or a path ending in them), whose contents go, as cp -r copies
// them. A symlink named on the command line is followed; inside a
// tree, links to files send the file, and links to directories, FIFOs,
// sockets and devices are passed over with a note, as a kerf server's
// GET -r passes them over. What cannot be sent (a missing path, an
// unreadable directory, a dangling link, a special file named on the
// command line, a second file of the same name) goes as a file whose
// Open fails: the engine reports it as not sent, tells a kerf receiver,
// and sends the rest. Only when nothing at all can be sent is that an
// error here.
//
// Past keepListed entries the list keeps only its counts, and the tree
// is walked again as it is sent (list): a tree changed in between is
// sent as it is then (counts and totals are of the first walk).
func listLocal(args []string, recursive bool, ex kermit.Exclusions) (*localList, error) {
	return listLocalSized(args, recursive, ex, true)
}

// listLocalSized is listLocal, which with sized false does not look at
// the regular files of a tree (a system call each): their sizes, times
// and modes come from their opens (kermit.OutgoingFile.StatAtOpen), for
// a send that needs no total bytes before it begins.
func listLocalSized(args []string, recursive bool, ex kermit.Exclusions, sized bool) (*localList, error) {
	return listSources(sendSources{paths: args}, recursive, ex, sized)
}

// listSources is listLocalSized for what src names, with its names.
func listSources(src sendSources, recursive bool, ex kermit.Exclusions, sized bool) (*localList, error) {
	l := &localList{src: src, recursive: recursive, ex: ex, overlap: overlappingTops(src, recursive), sized: sized}
	// What cannot be sent: how many, and the first reasons (the error
	// when nothing can be).
	unsendable := 0
	var reasons []string
	seen := map[string]bool{}
	keep := true
	err := walkLocal(src, recursive, ex, sized, l.overlap, func(f kermit.OutgoingFile, why error) bool {
		l.entries++
		if why != nil {
			if unsendable++; len(reasons) < maxReasons {
				reasons = append(reasons, why.Error())
			}
		}
		second := l.second(seen, f)
		if !f.Dir {
			l.regular++
			if !second {
				// The total is of the first file of a name, as the
				// reporter plans it (listed): a second one that goes
				// is replanned when it starts.
				l.bytes += max(f.Size, 0)
			}
		}
		if keep && l.entries > keepListed {
			keep, l.files = false, nil
		}
		if keep {
			l.files = append(l.files, f)
		}
		if f.Dir {
			l.dirs = append(l.dirs, f)
		}
		return true
	}, func(p, why string) { l.skipped = append(l.skipped, localSkip{p, why}) })
	if err != nil {
		return nil, err
	}
	if unsendable == l.entries && l.entries > 0 {
		// One line: the message goes out through printable, which would
		// show errors.Join's newlines as \x0a.
		msg := strings.Join(reasons, "; ")
		if more := unsendable - len(reasons); more > 0 {
			msg += fmt.Sprintf("; and %d more", more)
		}
		// Not a usage error: the command line was right, the files
		// are not there (a missing one beside others is exit 4 too).
		return nil, transferErr(errors.New(msg))
	}
	if keep {
		l.dirs = nil // ListOf finds them in files
	}
	return l, nil
}

// second reports whether f is a second file of a name, which seen (the
// names so far, of top elements that overlap) says.
func (l *localList) second(seen map[string]bool, f kermit.OutgoingFile) bool {
	if f.Dir {
		return false
	}
	top, _, _ := strings.Cut(f.Name, "/")
	if !l.overlap[top] {
		return false // one path alone names what is under top
	}
	if seen[f.Name] {
		return true
	}
	seen[f.Name] = true
	return false
}

// walk walks the list's paths again, each entry to yield but the
// second files of a name, which it hands to late (the walk decides, as
// the tree is then).
func (l *localList) walk(yield func(kermit.OutgoingFile) bool, late func(kermit.OutgoingFile)) {
	seen := map[string]bool{}
	walkLocal(l.src, l.recursive, l.ex, l.sized, l.overlap, func(f kermit.OutgoingFile, _ error) bool {
		if l.ctx != nil && l.ctx.Err() != nil {
			// Interrupted: what is left of a large tree is not walked
			// to name each file not begun.
			l.stoppedEarly = true
			return false
		}
		if l.second(seen, f) {
			late(f)
			return true
		}
		return yield(f)
	}, nil)
}

// list is what the send sends; listed, if not nil, is told of each
// entry as it is taken (the reporter's plan of the bytes to come).
func (l *localList) list(listed func(kermit.OutgoingFile)) kermit.FileList {
	var fl kermit.FileList
	switch {
	case l.files != nil && len(l.overlap) == 0:
		// No two paths name one top: the walk gave each name once.
		fl = kermit.ListOfUnique(l.files)
	case l.files != nil:
		fl = kermit.ListOf(l.files)
	default:
		var late []kermit.OutgoingFile // of the last walk of All
		fl = kermit.FileList{
			All: func(yield func(kermit.OutgoingFile) bool) {
				late = nil
				l.walk(yield, func(f kermit.OutgoingFile) {
					// Named or sent from Late once All is used up: not
					// among the files not walked.
					late = append(late, f)
					l.pulled++
				})
			},
			Dirs: slices.Values(l.dirs),
			Late: func(yield func(kermit.OutgoingFile) bool) {
				for _, f := range late {
					if !yield(f) {
						return
					}
				}
			},
		}
	}
	all := fl.All
	fl.All = func(yield func(kermit.OutgoingFile) bool) {
		for f := range all {
			if !f.Dir {
				l.pulled++
			}
			if listed != nil {
				listed(f)
			}
			if !yield(f) {
				return
			}
		}
	}
	return fl
}

// notWalked is how many files the first walk counted that a send
// interrupted did not take or name (its walk again stopped early).
func (l *localList) notWalked() int {
	if !l.stoppedEarly {
		return 0
	}
	return max(l.regular-l.pulled, 0)
}

// all returns every entry, in order (walked again if need be; second
// files of a name last).
func (l *localList) all() []kermit.OutgoingFile {
	if l.files != nil {
		return l.files
	}
	var files, late []kermit.OutgoingFile
	l.walk(func(f kermit.OutgoingFile) bool {
		files = append(files, f)
		return true
	}, func(f kermit.OutgoingFile) { late = append(late, f) })
	return append(files, late...)
}

// localFiles is listLocal's entries in a slice, their total bytes and
// what was passed over.
func localFiles(args []string, recursive bool, ex kermit.Exclusions) ([]kermit.OutgoingFile, int64, []localSkip, error) {
	return sourceFiles(sendSources{paths: args}, recursive, ex)
}

// sourceFiles is localFiles for what src names.
func sourceFiles(src sendSources, recursive bool, ex kermit.Exclusions) ([]kermit.OutgoingFile, int64, []localSkip, error) {
	l, err := listSources(src, recursive, ex, true)
	if err != nil {
		return nil, 0, nil, err
	}
	return l.all(), l.bytes, l.skipped, nil
}

// overlappingTops returns the top elements of the names sent that more
// than one of src's paths may give (a file and a tree of one name, two
// trees' contents, a listed file and its listed directory): only names
// under these can be given twice, and only these are remembered to
// catch a second one (memory independent of the files otherwise).
func overlappingTops(src sendSources, recursive bool) map[string]bool {
	if src.names != nil && !recursive {
		// Each entry gives its own name alone, and the list's repeats
		// are known (a list's entries all share a few tops: counting
		// them would remember every name).
		return maps.Clone(src.clash)
	}
	count := map[string]int{}
	for i, a := range src.paths {
		var tops map[string]bool
		contents := false
		if src.names != nil {
			top, _, _ := strings.Cut(src.names[i], "/")
			tops, contents = map[string]bool{top: true}, top == ""
		} else {
			tops = map[string]bool{filepath.Base(a): true, filepath.Base(filepath.Clean(a)): true}
			b := filepath.Base(a)
			contents = b == "." || b == ".."
		}
		if recursive && contents {
			// The contents go: each entry of the directory is a top.
			if entries, err := os.ReadDir(a); err == nil {
				for _, e := range entries {
					tops[e.Name()] = true
				}
			}
		}
		for t := range tops {
			count[t]++
		}
	}
	over := map[string]bool{}
	for t, n := range count {
		if n > 1 {
			over[t] = true
		}
	}
	return over
}

// walkLocal walks what src names (listLocal), handing each entry to
// emit in order, a directory before what is under it and marked Filled
// when something follows under it, with, for a file that cannot be
// sent, why; what is passed over goes to skip (nil: not told). It stops
// when emit returns false. The error is a directory named without -r.
// Names whose top element is in overlap are remembered to catch a
// second file of a name (sent as a file that cannot be sent).
func walkLocal(src sendSources, recursive bool, ex kermit.Exclusions, sized bool, overlap map[string]bool, emit func(f kermit.OutgoingFile, why error) bool, skip func(p, why string)) error {
	if skip == nil {
		skip = func(string, string) {}
	}
	// One entry held back: a directory's Filled is known from the next.
	var held kermit.OutgoingFile
	var heldWhy error
	has, stopped := false, false
	put := func(f kermit.OutgoingFile, why error) bool {
		if stopped {
			return false
		}
		if has {
			if held.Dir {
				held.Filled = f.Name == held.Name || strings.HasPrefix(f.Name, held.Name+"/")
			}
			has = false
			if !emit(held, heldWhy) {
				stopped = true
				return false
			}
		}
		held, heldWhy, has = f, why, true
		return true
	}
	flush := func() bool {
		if has && !stopped {
			has = false
			stopped = !emit(held, heldWhy)
		}
		return !stopped
	}
	unsent := func(name string, why error) bool {
		return put(kermit.OutgoingFile{Name: name, Size: 0,
			Open: func() (kermit.FileReader, error) { return nil, why }}, why)
	}
	from := map[string]string{} // name sent: local path, to catch two of one name
	add := func(p, name string, fi fs.FileInfo) bool {
		top, _, _ := strings.Cut(name, "/")
		if overlap[top] {
			if first, dup := from[name]; dup {
				if filepath.Clean(first) == filepath.Clean(p) {
					return true // named twice (send f f): sent once, as get does
				}
				return unsent(name, fmt.Errorf("%s: same name as %s, sent already", p, first))
			}
			from[name] = p
		}
		open := func() (kermit.FileReader, error) {
			f, err := filestore.OpenLocal(p)
			if err != nil {
				return nil, kermit.LinkTargetGoneAt(err, func() (fs.FileInfo, error) { return os.Lstat(p) })
			}
			return f, nil
		}
		if fi == nil { // not looked at (walkTree, unsized)
			return put(kermit.OutgoingFile{Name: name, Size: -1, ModeKnown: true, StatAtOpen: true, Open: open, Path: p}, nil)
		}
		return put(kermit.OutgoingFile{
			Name: name, Size: fi.Size(), ModTime: fi.ModTime(), ChangeTime: kermit.ChangeTimeOf(fi), Status: kermit.StatusOf(fi),
			Mode: fi.Mode().Perm(), ModeKnown: true, Open: open,
			Path: p, Moved: &runMoved,
		}, nil)
	}
	for i, a := range src.paths {
		name, top, exName := src.nameOf(i)
		fi, err := os.Stat(a)
		if err != nil {
			if !unsent(name, err) {
				return nil
			}
			continue
		}
		if exName != "" && ex.Excludes(exName, fi.IsDir()) {
			continue // --exclude takes names given too, as rsync's does
		}
		switch {
		case fi.Mode().IsRegular():
			if !add(a, name, fi) {
				return nil
			}
		case fi.IsDir() && recursive:
			walkTree(a, top, ex, sized, add, unsent,
				func(name string, fi fs.FileInfo) bool { return put(dirEntry(name, fi), nil) }, skip)
			// Filled is of one tree: its last directory has nothing
			// under it, whatever the next path gives.
			if !flush() {
				return nil
			}
		case fi.IsDir() && src.names != nil:
			// A listed directory without -r is made there, as rsync's
			// --files-from makes it (its files go only if listed); the
			// list's directory itself is the destination.
			if top != "" && !put(dirEntry(top, fi), nil) {
				return nil
			}
		case fi.IsDir():
			return usageErr("%s is a directory (use -r)", a)
		default:
			if !unsent(name, fmt.Errorf("%s: not a regular file (%s)", a, filestore.EntryKind(fi.Mode()))) {
				return nil
			}
		}
	}
	flush()
	return nil
}

// dirEntry is the directory fi sent as name, with its mode and time.
func dirEntry(name string, fi fs.FileInfo) kermit.OutgoingFile {
	return kermit.OutgoingFile{Name: name, Dir: true,
		ModTime: fi.ModTime(), Mode: fi.Mode() & (fs.ModePerm | fs.ModeSticky), ModeKnown: true}
}

// walkTree walks the directory root for walkLocal, naming what it finds
// top/relative-path: regular files (and links to them) go to add, what
// cannot be sent to fail, what is passed over to skip, and every
// directory but the top of a "." (its contents) to dir, before what is
// in it, with its details (for a kerf peer; Kermit has no directories).
// Unless sized, a regular file goes to add with no details (nil): it is
// not looked at. It stops when add, fail or dir returns false.
func walkTree(root, top string, ex kermit.Exclusions, sized bool, add func(p, name string, fi fs.FileInfo) bool, fail func(name string, err error) bool, dir func(name string, fi fs.FileInfo) bool, skip func(p, why string)) {
	if lfi, err := os.Lstat(root); err == nil && lfi.Mode()&fs.ModeSymlink != 0 {
		root += string(filepath.Separator) // WalkDir follows only "link/"
	}
	// WalkDir names what is under root filepath.Join(root, rel): clean
	// root then a separator, which is cut rather than worked out again
	// (filepath.Rel and path.Join, two allocations an entry).
	under := filepath.Clean(root) + string(filepath.Separator)
	if under == "//" {
		under = "/"
	}
	nameOf := func(p string) string {
		if rel, ok := strings.CutPrefix(p, under); ok && rel != "" && p != root && filepath.Separator == '/' {
			switch {
			case top == "":
				return rel
			case !strings.HasSuffix(top, "/"):
				return top + "/" + rel
			}
		}
		rel, _ := filepath.Rel(root, p)
		return path.Join(top, filepath.ToSlash(rel))
	}
	goOn := func(ok bool) error {
		if !ok {
			return filepath.SkipAll
		}
		return nil
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		name := nameOf(p)
		if d != nil && name != "." && ex.Excludes(name, d.IsDir()) {
			// Left out, and a directory all that is under it: not walked.
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if err != nil {
			// An unreadable directory (its contents unknown), a path too
			// long: not sent, and the walk goes on.
			if !fail(name, err) {
				return filepath.SkipAll
			}
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if filestore.IsPartName(d.Name()) {
				// Named as kerf's partials are: a receiver refuses
				// everything under it.
				skip(p, "a directory named as kerf's own partial files (.NAME.kerf-part)")
				return fs.SkipDir
			}
			if name != "." {
				if info, err := d.Info(); err == nil {
					return goOn(dir(name, info))
				}
			}
			return nil
		}
		if filestore.IsPartName(d.Name()) {
			// kerf's own partial (an interrupted transfer's): a
			// receiver refuses the name, and a server never serves it.
			skip(p, "kerf's own partial file (.NAME.kerf-part)")
			return nil
		}
		if !sized && d.Type().IsRegular() {
			return goOn(add(p, name, nil)) // its open looks at it
		}
		info, err := d.Info()
		if err != nil {
			return goOn(fail(name, err))
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Stat(p)
			switch {
			case err != nil:
				if moved := linkToMoved(p, err); moved != nil {
					skip(p, strings.TrimPrefix(moved.Error(), kermit.ErrPassedOver.Error()+": "))
					return nil
				}
				return goOn(fail(name, fmt.Errorf("symbolic link to nothing readable: %w", err)))
			case target.Mode().IsRegular():
				info = target // as scp -r does, a link to a file sends the file
			case target.IsDir():
				skip(p, "a symbolic link to a directory (not followed: no loops)")
				return nil
			default:
				skip(p, "not a regular file (a symbolic link to "+filestore.EntryKind(target.Mode())+")")
				return nil
			}
		}
		if !info.Mode().IsRegular() {
			skip(p, fmt.Sprintf("not a regular file (%s)", filestore.EntryKind(info.Mode())))
			return nil
		}
		return goOn(add(p, name, info))
	})
}

// linkToMoved is why the link p, whose target is gone (err), is passed
// over: it led to a file a --remove-source-files of this run moved
// already (runMoved); or nil.
func linkToMoved(p string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	to, rerr := os.Readlink(p)
	if rerr != nil {
		return nil
	}
	if !filepath.IsAbs(to) {
		to = filepath.Join(filepath.Dir(p), to)
	}
	abs, aerr := filepath.Abs(to)
	if aerr != nil {
		return nil
	}
	return runMoved.From(abs)
}
