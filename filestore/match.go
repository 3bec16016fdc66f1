// Matching a GET filespec and walking what it names into files to send.

package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"kerf/framing"
	"kerf/kermit"
)

// Match resolves a GET filespec: names separated by spaces (braces
// group a name with spaces), each possibly with wildcards in its last
// element; a name that exists as it is is taken literally (see glob). With recursive, a directory stands for everything under it,
// named relative to the directory's parent. A wildcard passes over what
// it matches that cannot be sent (directories, without recursive); a
// name given plainly that cannot be sent is an error.
func (d *Dir) Match(spec string, recursive bool) ([]kermit.OutgoingFile, error) {
	var out []kermit.OutgoingFile
	if _, err := d.MatchWalk(spec, recursive, nil, func(f kermit.OutgoingFile) bool {
		out = append(out, f)
		return true
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// MatchWalk is Match handing the entries to yield one at a time as the
// walk finds them, until yield returns false, keeping of what trees
// walked hold only the entries keep accepts by the name they are sent
// under (directories are all kept; a nil keep keeps all), and saying how
// many it left out: a GET of a million files holds only the walk's
// current directories, not its listing, its first files go while the
// rest are still being found, and a session serving one share of a tree
// stats only its share. An error of
// the whole spec (a single name that does not exist or cannot be sent)
// comes before any entry. (Not named as a kermit interface's method: a
// ServerFS that embeds a Dir and wraps its Match would have its wrapper
// passed over.)
func (d *Dir) MatchWalk(spec string, recursive bool, keep func(name string) bool, yield func(kermit.OutgoingFile) bool) (left int, err error) {
	var whole error // a single name's, which comes instead of any entry
	err = d.eachSpecName(spec, false, func(n specName, alone bool) bool {
		var bad error // what makes a name given plainly unsendable
		var target fs.FileInfo
		var targetErr error
		at := n.rel // what a link is opened by (linkTarget)
		if n.err == nil && n.fi.Mode()&fs.ModeSymlink != 0 && !d.linksToPart(n.rel) {
			// A link to a file in the tree sends the file, as in a
			// walk (-r); os.Root refuses one leading out.
			target, at, targetErr = d.linkTarget(n.rel)
		}
		more := true
		switch fi := n.fi; {
		case n.err != nil:
			bad = n.err
		case fi.Mode().IsRegular():
			more = yield(d.outgoing(n.rel, path.Base(n.rel), fi, false, n.rel))
		case target != nil && target.Mode().IsRegular():
			more = yield(d.outgoing(n.rel, path.Base(n.rel), target, true, at))
		case fi.IsDir() && recursive:
			more = d.walk(n.rel, n.contents, keep, &left, yield)
		case target != nil && target.IsDir() && recursive && !n.pattern:
			// A link to a directory named plainly: its tree, under the
			// link's name, as send -r does with a local one and as
			// "link/" is (the walk itself follows no link to a
			// directory, so there is no loop).
			more = d.walk(n.rel, n.contents, keep, &left, yield)
		case n.pattern && fi.Mode()&fs.ModeSymlink != 0 && target == nil && targetErr == nil:
			// A link to a partial: never served, as in a walk.
		case n.pattern && targetErr != nil:
			// A link leading nowhere or out of the tree, found by a
			// wildcard: named as failed, as a walk names it.
			more = yield(unreadable(path.Base(n.rel), d.linkGone(n.rel, targetErr)))
		case n.pattern:
			// A wildcard passes over directories (without -r) and
			// special files, and says so, as a walk does and as rsync
			// does ("skipping directory"): they went unmentioned (QA).
			what := EntryKind(fi.Mode())
			switch {
			case fi.IsDir():
				what = "a directory (not copied without -r)"
			case target != nil && target.IsDir():
				what = "a link to a directory"
			case target != nil:
				what = "a link to " + EntryKind(target.Mode())
			}
			more = yield(kermit.OutgoingFile{Name: path.Base(n.rel), Size: -1,
				Open: func() (kermit.FileReader, error) { return nil, kermit.PassedOver(what) }})
		case fi.IsDir():
			bad = fmt.Errorf("filestore: %s is a directory (use -r)", n.rel)
		case targetErr != nil && !errors.Is(targetErr, fs.ErrNotExist):
			bad = targetErr // leading out: the caller says so in words
		case target != nil && target.IsDir():
			bad = fmt.Errorf("filestore: %s is a link to a directory (use -r)", n.rel)
		case fi.Mode()&fs.ModeSymlink != 0 && target == nil && targetErr == nil:
			// Not "not a regular file (a symbolic link)": its target
			// may well be one (QA af).
			bad = fmt.Errorf("filestore: %s is a link to a partial file (a transfer's, under way or cut off), which is not served", n.rel)
		default:
			bad = fmt.Errorf("filestore: %s is not a regular file (%s)", n.rel, EntryKind(fi.Mode()))
		}
		if !more || bad == nil {
			return more
		}
		if alone && !n.pattern {
			whole = bad
			return false
		}
		// One of several names (or a wildcard's match): the others
		// still go, and this one is reported as not sent (as a file
		// that cannot be read is).
		return yield(unreadable(path.Base(n.rel), bad))
	})
	if err == nil {
		err = whole
	}
	if err != nil {
		return 0, err
	}
	return left, nil
}

// EntryKind names what an entry of mode m is, for a message ("a named
// pipe"): the sending client's walk and a server's say the same.
func EntryKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeIrregular != 0:
		return "of an unknown type"
	}
	return "a regular file"
}

// linksToPart reports whether the symbolic link rel names a partial
// file (.NAME.kerf-part), which is never served, through a link either:
// followed link by link, as far as the kernel would (40), so that a
// link to a link to a partial is caught too (review). A loop is not
// one.
func (d *Dir) linksToPart(rel string) bool {
	for range 40 {
		to, err := d.root.Readlink(rel)
		if err != nil {
			return false // not a link (any more): what it names is no partial
		}
		if IsPartName(path.Base(to)) {
			return true
		}
		if path.IsAbs(to) {
			return false // leading out: os.Root refuses it anyway
		}
		rel = path.Join(path.Dir(rel), to)
		if fi, err := d.root.Lstat(rel); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return false
		}
	}
	// A chain this long is a loop: no partial, and following it fails
	// (ELOOP), which the client is told (QA: get -r passed over loops
	// without a word, taken for links to partials).
	return false
}

// specName is a name a filespec resolved to, relative to the tree's top,
// and its entry (not following a link); pattern reports that a wildcard
// found it rather than the spec naming it.
type specName struct {
	rel      string
	pattern  bool
	contents bool // named as "dir/." or "dir/..": a walk names entries from within it
	fi       fs.FileInfo
	err      error // of one of several names, that names nothing usable
	nomatch  bool  // err is of a pattern, one of several, that matched nothing
}

// eachSpecName splits spec into names (see Match), resolves each to
// its entry and hands them to yield one at a time, a wildcard's matches
// as they are looked at, until yield returns false: what a wildcard
// matches in a directory of a million entries is never held but as the
// names of the matches (readDir; QA w: a GET of entry* in a directory
// of 500,000 took the server 434 MB). With literal, spec is the one
// entry it names as it is: no split into names, no pattern
// (ListLiteral). A name given plainly that does not exist is an error;
// one a wildcard found and that is gone since its directory was read is
// left out. With a single name, an error of it comes back, before any
// entry; of several names, each one's error comes as its specName's, and
// the caller decides (Match sends the others, List fails). alone is
// whether spec was a single name.
func (d *Dir) eachSpecName(spec string, literal bool, yield func(n specName, alone bool) bool) error {
	pats := []string{spec}
	if !literal {
		pats = d.specPatterns(spec)
	}
	if err := checkSpecSize(pats); err != nil {
		return err
	}
	alone := len(pats) == 1
	// Each entry once, however many names find it: a GET of "* * * …"
	// held every match once a star (QA: 8 KB of stars, 800 MB). What
	// the names before found is told by the names themselves, not kept:
	// the plain names found, and the wildcards read.
	var dups dupCheck
	for _, pat := range pats {
		rel, err := d.resolve(pat)
		found, more := 0, true
		if err == nil {
			fix := d.specFix(pat)
			wild := false
			err = d.eachMatch(rel, literal, func(m specName) bool {
				wild = wild || m.pattern
				m, ok := fix(m)
				if !ok {
					return true
				}
				found++
				if !alone && dups.seen(m, d.isDirOrLinkToDir) {
					return true
				}
				dups.found(m)
				more = yield(m, alone)
				return more
			})
			if !more {
				return nil
			}
			if dir, base := splitRel(rel); err == nil && !literal && hasWildcard(base) && (wild || found == 0) {
				// Read as a wildcard (not an entry of that name).
				dups.wild = append(dups.wild, wildRead{dir, kermit.GlobClasses(base), namesDirectory(pat)})
			}
			if err == nil && found == 0 && !alone {
				// A wildcard among several names that matches
				// nothing: a GET says so (QA: it was passed over
				// in silence, exit 0, where alone it fails).
				if !yield(specName{rel: pat, pattern: true, nomatch: true, err: fmt.Errorf("filestore: no files match %s", pat)}, alone) {
					return nil
				}
			}
		}
		if err != nil {
			if alone {
				return err
			}
			if !yield(specName{rel: pat, err: err}, alone) {
				return nil
			}
		}
	}
	return nil
}

// specFix is what name pat asks of each entry it finds beyond the entry
// itself: "dir/." and "dir/.." its contents (cp's rule, as send -r has
// "dir/."); "link/" the directory the link leads to, as for ls(1) (os.Root
// follows it only within the tree), and "f/" a directory, never the file
// f (QA: get host/file/ took the file), an error when named plainly, and
// a match left out for a wildcard ("d*/": the directories, as a shell's).
func (d *Dir) specFix(pat string) func(specName) (specName, bool) {
	slash := namesDirectory(pat)
	e := path.Base(pat)
	contents := e == "." || e == ".."
	return func(m specName) (specName, bool) {
		if m.err != nil {
			return m, true
		}
		if contents && !m.pattern {
			// Not a wildcard's matches ("d*/."): walked from within,
			// they would land in one directory, a file of one over
			// another's of its name (QA x).
			m.contents = true
		}
		if !slash {
			return m, true
		}
		if m.fi.Mode()&fs.ModeSymlink != 0 {
			if fi, serr := d.root.Stat(m.rel); serr == nil && fi.IsDir() {
				m.fi = fi
			}
		}
		switch {
		case m.fi.IsDir():
		case m.pattern:
			return m, false
		case m.fi.Mode().IsRegular():
			m.fi, m.err = nil, fmt.Errorf("filestore: %s: %w", m.rel, unix.ENOTDIR)
		}
		return m, true
	}
}

// isDirOrLinkToDir reports whether m is a directory or a link to one in
// the tree.
func (d *Dir) isDirOrLinkToDir(m specName) bool {
	if m.fi.IsDir() {
		return true
	}
	if m.fi.Mode()&fs.ModeSymlink == 0 {
		return false
	}
	fi, err := d.root.Stat(m.rel)
	return err == nil && fi.IsDir()
}

// namesDirectory reports whether pat names a directory only: it ends in
// "/" or in "/." or "/.." ("f/." is no more the file f than "f/" is;
// QA x).
func namesDirectory(pat string) bool {
	e := path.Base(pat)
	return strings.HasSuffix(pat, "/") || e == "." && pat != "." || e == ".." && pat != ".."
}

// dupCheck tells whether a name found was found before by the names of
// a spec before it: a plain name by being one of them, a wildcard's
// match by what the wildcards read match.
type dupCheck struct {
	plain map[string]bool
	wild  []wildRead
}

// wildRead is a wildcard whose directory was read: base (after
// kermit.GlobClasses) matched in dir, only directories if dirsOnly
// ("d*/").
type wildRead struct {
	dir, base string
	dirsOnly  bool
}

// found records a plain name's entry.
func (c *dupCheck) found(m specName) {
	if m.err == nil && !m.pattern {
		if c.plain == nil {
			c.plain = map[string]bool{}
		}
		c.plain[m.rel] = true
	}
}

// seen reports whether m was found before; isDir says whether m stands
// for a directory, as a "d*/" before it took a link to one (review: a
// link found by "l*/" as its directory and then by name was sent
// twice).
func (c *dupCheck) seen(m specName, isDir func(specName) bool) bool {
	if m.err != nil {
		return false
	}
	if c.plain[m.rel] {
		return true
	}
	dir, base := splitRel(m.rel)
	for _, w := range c.wild {
		if w.dir == dir && globMatches(w.base, base) && (!w.dirsOnly || isDir(m)) {
			return true
		}
	}
	return false
}

// maxSpecNames and maxSpecWildcards bound what one request may name:
// each wildcard reads its directory, so a spec of thousands would make
// the server read a large directory thousands of times for one packet
// (QA). A client splits longer lists into several GETs of at most
// 4,000 bytes, well within these.
const (
	maxSpecNames     = 4096
	maxSpecWildcards = 256
)

// checkSpecSize refuses a spec of more names, or wildcards, than one
// request may have.
func checkSpecSize(pats []string) error {
	if len(pats) > maxSpecNames {
		return fmt.Errorf("filestore: %d names in one request: at most %d", len(pats), maxSpecNames)
	}
	n := 0
	for _, p := range pats {
		if hasWildcard(path.Base(p)) {
			n++
		}
	}
	if n > maxSpecWildcards {
		return fmt.Errorf("filestore: %d wildcards in one request: at most %d", n, maxSpecWildcards)
	}
	return nil
}

// specPatterns splits spec into its names (framing.SplitSpec), unless
// spec, or spec without its outer braces, names an existing entry
// whole: C-Kermit 10 sends a GET of {a b} as "a b", and a name such as
// "a} {b" cannot be quoted so that it splits back (framing.JoinSpec),
// so clients send it alone.
func (d *Dir) specPatterns(spec string) []string {
	pats := framing.SplitSpec(spec)
	whole := []string{spec}
	if len(spec) > 2 && spec[0] == '{' && spec[len(spec)-1] == '}' {
		// One brace-quoted name: braces inside it ("{a {b}.txt}",
		// "{c{d e}") would split it wrongly.
		whole = append(whole, spec[1:len(spec)-1])
	}
	for _, w := range whole {
		if len(pats) == 1 && pats[0] == w {
			break
		}
		if rel, err := d.resolve(w); err == nil {
			if _, err := d.root.Lstat(rel); err == nil {
				return []string{w}
			}
		}
	}
	return pats
}

// hasWildcard reports whether a name element has path.Match's wildcards.
func hasWildcard(elem string) bool { return strings.ContainsAny(elem, "*?[") }

// eachMatch hands yield, until it returns false, what rel names: with
// literal, or if rel has no wildcards or names an existing entry, rel
// itself; else, in order of name, the entries of its directory that its
// last element matches as a pattern (globMatches). An existing name wins
// because a peer has no way to quote *, ? and [ (CleanName refuses the
// backslash): "star*" would otherwise always bring "stardust" too, and
// "brk[et" nothing at all. An error of the whole (rel not there, its
// directory unreadable, a bad pattern) comes back before any entry; a
// match whose details cannot be read comes as its specName's err.
func (d *Dir) eachMatch(rel string, literal bool, yield func(specName) bool) error {
	dir, base := splitRel(rel)
	fi, err := d.root.Lstat(rel)
	if literal || !hasWildcard(base) {
		if err != nil {
			return fmt.Errorf("filestore: %w", err)
		}
		yield(specName{rel: rel, fi: fi})
		return nil
	}
	if err == nil {
		yield(specName{rel: rel, fi: fi})
		return nil
	}
	// [!a] as the shell has it (QA: it matched a, as path.Match's
	// class of '!' and 'a').
	base = kermit.GlobClasses(base)
	if _, err := path.Match(base, ""); err != nil {
		return fmt.Errorf("filestore: %s: %w", rel, err)
	}
	ents, err := readDir(d.root, dir, func(name string) bool { return globMatches(base, name) })
	defer ents.close()
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	for e := range ents.all() {
		m := specName{rel: path.Join(dir, e.Name()), pattern: true}
		m.fi, err = e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone: passed over
		}
		if err != nil {
			m.err = fmt.Errorf("filestore: %w", err)
		}
		if !yield(m) {
			return nil
		}
	}
	if err := ents.readErr(); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	return nil
}

// globMatches reports whether pattern (path.Match's, after
// kermit.GlobClasses) matches name, an entry's name, as a wildcard of a
// filespec matches: never a partial file, and a leading dot only with
// one in the pattern, as shells and C-Kermit (SET MATCH DOTFILE OFF)
// match it: "*" must not bring .ssh or .netrc along.
func globMatches(pattern, name string) bool {
	if strings.HasPrefix(name, ".") && !strings.HasPrefix(pattern, ".") {
		return false
	}
	ok, _ := path.Match(pattern, name)
	return ok && !IsPartName(name)
}

// walk hands yield the regular files under directory top, named
// relative to its parent (to top itself with contents), and says
// whether yield wanted them all. An entry that cannot be read (a
// directory without permission, a file whose details cannot be had)
// does not end the walk: it becomes a file whose Open returns the
// error, so that the sending engine sends the rest and reports that one
// as failed, by name.
func (d *Dir) walk(top string, contents bool, keep func(string) bool, dropped *int, yield func(kermit.OutgoingFile) bool) bool {
	parent := path.Dir(top)
	if contents {
		parent = top // named from within: top itself is "."
	}
	name := func(p string) string {
		switch {
		case p == parent:
			return "."
		case parent == ".":
			return p
		}
		return strings.TrimPrefix(p, parent+"/")
	}
	// A directory is Filled when the entry after it, kept or left out,
	// is in it (MarkFilled's rule, decided as the walk goes, so that
	// entries left out count): dir is the last directory entry, held
	// back until the next entry decides it.
	var dir *kermit.OutgoingFile
	stopped := false
	follows := func(n string) {
		if dir != nil {
			dir.Filled = n == dir.Name || strings.HasPrefix(n, dir.Name+"/")
			held := *dir
			dir = nil
			if !yield(held) {
				stopped = true
			}
		}
	}
	add := func(f kermit.OutgoingFile) {
		follows(f.Name)
		if stopped {
			return
		}
		if !f.Dir && keep != nil && !keep(f.Name) {
			*dropped++
			return
		}
		if f.Dir {
			dir = &f
			return
		}
		if !yield(f) {
			stopped = true
		}
	}
	walkDir(d.root, top, func(p string, e fs.DirEntry, err error) error {
		if stopped {
			return fs.SkipAll
		}
		if err != nil {
			// A directory that could not be read (WalkDir goes on with
			// any entries it did read): reported, not made empty.
			add(unreadable(name(p), fmt.Errorf("filestore: %w", err)))
			return nil
		}
		if e.IsDir() {
			if p != top && IsPartName(e.Name()) {
				// Named as kerf's partials are: never served, as
				// no receiver would store what is under it.
				return fs.SkipDir
			}
			// Every directory goes, before what is in it, with its
			// details (kermit.OutgoingFile.Dir); not the top of a
			// "." (its contents).
			if n := name(p); n != "." {
				if info, err := e.Info(); err == nil {
					add(kermit.OutgoingFile{Name: n, Dir: true,
						ModTime: info.ModTime(), Mode: info.Mode() & (fs.ModePerm | fs.ModeSticky), ModeKnown: true})
				}
			}
			return nil
		}
		if IsPartName(e.Name()) {
			return nil
		}
		if n := name(p); keep != nil && e.Type().IsRegular() && !keep(n) {
			// Left out before its stat: n sessions sharing a tree do
			// not each stat all of it.
			follows(n)
			*dropped++
			return nil
		}
		var info fs.FileInfo
		at := p // what a link is opened by (linkTarget)
		linked := e.Type()&fs.ModeSymlink != 0
		if e.Type().IsRegular() {
			info, err = e.Info()
			err = asNamed(err, p)
			// Made a link since its directory was read (QA: said to be
			// "a link to a symbolic link", and one leading out of the
			// tree passed over, not refused): taken as the link it is.
			linked = err == nil && info.Mode()&fs.ModeSymlink != 0
		}
		switch {
		case linked && d.linksToPart(p):
			return nil // a partial is never served
		case linked:
			// As the sending client does (scp -r): a link to a file in
			// the tree sends the file; os.Root refuses one leading out.
			info, at, err = d.linkTarget(p)
		}
		if err == nil && (info == nil || !info.Mode().IsRegular()) {
			// FIFOs, sockets, devices and links to directories are not
			// files to copy (rsync -r skips them too), but the client
			// hears of them, as the sending client warns of its own.
			what := EntryKind(e.Type())
			switch {
			case info == nil:
			case linked && info.IsDir():
				what = "a link to a directory"
			case linked:
				what = "a link to " + EntryKind(info.Mode())
			default: // no longer the file its directory listed
				what = EntryKind(info.Mode())
			}
			add(kermit.OutgoingFile{Name: name(p), Size: -1,
				Open: func() (kermit.FileReader, error) { return nil, kermit.PassedOver(what) }})
			return nil
		}
		if err != nil && linked {
			// A link that leads nowhere or out of the tree was meant to
			// be a file: the client hears of it (announceUnsent), or
			// that its file was moved already.
			add(unreadable(name(p), d.linkGone(p, err)))
			return nil
		}
		if err != nil {
			add(unreadable(name(p), fmt.Errorf("filestore: %w", err)))
			return nil
		}
		if n := name(p); keep != nil && !keep(n) {
			// Not even its entry is made (a share of a big tree).
			follows(n)
			*dropped++
			return nil
		}
		add(d.outgoing(p, name(p), info, linked, at))
		return nil
	})
	if dir != nil && !stopped {
		// The walk's last entry: nothing follows it, so it is empty.
		held := *dir
		dir = nil
		return yield(held)
	}
	return !stopped
}

// MarkFilled marks the directories of one walk's entries (directories
// before what is in them, as fs.WalkDir gives them) that have something
// under them, a file or a directory or an entry that could not be read:
// the directory's own such entry, or the next entry being inside it.
// The others, with nothing that would make them, go to every kerf peer
// as empty directories (kermit.OutgoingFile.Filled); walkTree uses it,
// and walk decides it by the same rule as it goes.
func MarkFilled(files []kermit.OutgoingFile) {
	for i := 0; i+1 < len(files); i++ {
		n, next := files[i].Name, files[i+1].Name
		files[i].Filled = files[i].Dir && (next == n || strings.HasPrefix(next, n+"/"))
	}
}

// asNamed is err, a DirEntry.Info's error, with the entry's path in the
// tree, rel, in place of the path the system used (the root's own path
// in front: a client must not see where its tree is on the server).
func asNamed(err error, rel string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: rel, Err: pe.Err}
	}
	return err
}

// unreadable is an entry of a GET that could not be read, for err
// (already saying "filestore:").
func unreadable(name string, err error) kermit.OutgoingFile {
	return kermit.OutgoingFile{
		Name: name, Size: -1,
		Open: func() (kermit.FileReader, error) { return nil, err },
	}
}

// linkTarget is what the symbolic link rel leads to: its entry, and the
// path to open it by (rel itself, which os.Root follows while it stays
// in the tree; or, for an absolute link into the tree, the path it
// names under the tree's top, which os.Root will not follow: QA ab, a
// get -r of a tree with /srv/data/latest -> /srv/data/v2 failed).
func (d *Dir) linkTarget(rel string) (fs.FileInfo, string, error) {
	fi, err := d.root.Stat(rel)
	if err == nil || !LeadsOutside(err) {
		return fi, rel, err
	}
	to, rerr := d.root.Readlink(rel)
	if rerr != nil || !filepath.IsAbs(to) {
		return fi, rel, err
	}
	at, ok := d.underTop(to)
	if !ok || IsPartName(path.Base(at)) || d.linksToPart(at) {
		return fi, rel, err // a partial is never served, through any link
	}
	tfi, terr := d.root.Stat(at)
	switch {
	case terr == nil && tfi.Mode().IsRegular():
		return tfi, at, nil
	case errors.Is(terr, fs.ErrNotExist):
		return nil, rel, terr // into the tree, to nothing (linkGone)
	}
	return fi, rel, err
}

// underTop is the absolute path p as a path of the tree, if it lies
// under the tree's top (its real path; the top may be named through a
// link), and not the top itself.
func (d *Dir) underTop(p string) (string, bool) {
	d.topOnce.Do(func() {
		if abs, err := filepath.Abs(d.root.Name()); err == nil {
			d.top, _ = filepath.EvalSymlinks(abs)
		}
	})
	if d.top == "" {
		return "", false
	}
	r, err := filepath.Rel(d.top, filepath.Clean(p))
	if err != nil || r == "." || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// outgoing is the file rel, to be sent as name; fi is its entry, or the
// entry a symlink at rel leads to (link), opened by at (linkTarget).
func (d *Dir) outgoing(rel, name string, fi fs.FileInfo, link bool, at string) kermit.OutgoingFile {
	m := listedAs(fi)
	open := func() (kermit.FileReader, error) { return d.openFile(rel, m) }
	if link {
		// os.Root follows the link, as long as it stays in the tree.
		// Only the file the link led to when listed: one it leads to
		// now (repointed at a partial, say) is not sent in its place.
		open = func() (kermit.FileReader, error) {
			f, err := d.root.Open(at)
			if err != nil {
				return nil, kermit.LinkTargetGoneAt(err, func() (fs.FileInfo, error) { return d.root.Lstat(rel) })
			}
			if !m.is(f) {
				f.Close()
				return nil, fmt.Errorf("filestore: %s changed since it was listed", rel)
			}
			return f, nil
		}
	}
	return kermit.OutgoingFile{
		Name: name, Size: fi.Size(), ModTime: fi.ModTime(), ChangeTime: kermit.ChangeTimeOf(fi), Status: kermit.StatusOf(fi),
		Mode: fi.Mode().Perm(), ModeKnown: true, Open: open, Path: rel, Moved: d.Moved,
	}
}

// openFile opens the file rel for reading with one openat in its
// directory's cached handle, where os.Root.Open would walk the whole
// path again (an openat and an fcntl per element), which was a third
// of what a GET of many small files cost the server. O_NOFOLLOW: a
// file replaced by a symlink since the directory was read is refused,
// not followed out of the tree. The file opened must be the one the
// match found (fi, from a walk of the path under the root): a cached
// handle follows its directory, not the directory's name, so after the
// directory was renamed or replaced it would find another file, or one
// no longer in the tree. Then, or when the openat fails, the handle is
// dropped and the path is opened afresh from the root.
func (d *Dir) openFile(rel string, m listed) (*os.File, error) {
	dir, base := splitRel(rel)
	h, err := d.openDir(dir, false)
	if err != nil {
		return d.openMatched(rel, m)
	}
	f, err := h.openRead(d, base)
	if err == nil && m.is(f) {
		d.putDir(h)
		return f, nil
	}
	if err == nil {
		f.Close()
	}
	d.dropDir(h)
	d.putDir(h)
	return d.openMatched(rel, m)
}

// openMatched opens rel afresh from the root, and only if it is still
// the file its match found: one replaced since (by another file, or by
// a symlink, which os.Root would follow) is refused, not sent in its
// place under the match's size and time.
func (d *Dir) openMatched(rel string, m listed) (*os.File, error) {
	// O_NONBLOCK: a named pipe put in its place would block the open for
	// ever; it is not the file matched, and refused below.
	f, err := d.root.OpenFile(rel, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if m.is(f) || d.isPlainFileAt(rel, f) {
		// The file listed; or another put at its name since (a new
		// version renamed over it, as files are published), sent under
		// its own size and time (the sender takes them from the open
		// file, kermit.asOpened), as rsync sends what is there when its
		// turn comes.
		return f, nil
	}
	f.Close()
	return nil, fmt.Errorf("filestore: %s changed since it was listed", rel)
}

// listed is what a file listed for a GET was: its identity, kept
// rather than its whole FileInfo (a Stat_t each), since a big tree's
// listing holds one per file until it is sent.
type listed struct {
	id  fileID
	typ fs.FileMode
	fi  fs.FileInfo // only where the identity is not known
}

func listedAs(fi fs.FileInfo) listed {
	if id, ok := identityOf(fi); ok {
		return listed{id: id, typ: fi.Mode().Type()}
	}
	return listed{fi: fi, typ: fi.Mode().Type()}
}

// isPlainFileAt reports whether f, opened at rel, is the regular file
// rel itself names, reached through plain directories: os.Root follows
// links inside the tree (O_NOFOLLOW or not), and a replaced file is not
// taken through one, at its name or at a directory above it (a walk
// never follows a link to a directory). Best effort: the checks are
// not atomic with the open, and at worst take another file of the tree.
func (d *Dir) isPlainFileAt(rel string, f *os.File) bool {
	li, err := d.root.Lstat(rel)
	if err != nil || !li.Mode().IsRegular() || !listedAs(li).is(f) {
		return false
	}
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if di, err := d.root.Lstat(dir); err != nil || !di.IsDir() {
			return false
		}
	}
	return true
}

// identityOf is fi's device and inode, where its Sys says.
func identityOf(fi fs.FileInfo) (fileID, bool) {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return fileID{uint64(st.Dev), st.Ino}, true
	case *unix.Stat_t:
		return fileID{uint64(st.Dev), st.Ino}, true
	}
	return fileID{}, false
}

// is reports whether f is the file listed.
func (m listed) is(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || st.Mode().Type() != m.typ {
		// The type too: an inode number is reused at once once freed (a
		// file removed and a named pipe made in its place can have its
		// number).
		return false
	}
	if m.fi != nil {
		return os.SameFile(m.fi, st)
	}
	id, ok := identityOf(st)
	return ok && id == m.id
}
