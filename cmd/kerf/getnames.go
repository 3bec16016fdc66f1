package main

import (
	"errors"
	"path"
	"strings"

	"kerf/kermit"
)

// errNotAsked refuses a name a server sent that the get did not ask for.
var errNotAsked = errors.New("not among the names asked for (a server sends only what a get names: a file, what a wildcard matches, a tree under the name given)")

// expectNames is the check a get's store makes of each name the server
// sends (filestore.Dir.Expect): that it is one the get asked for, as
// scp checks since CVE-2019-6111. Without it a hostile or broken server
// could put any name under the destination: `get host/report.pdf ~`
// storing .bashrc, or `get -r host/photos ~` storing
// .ssh/authorized_keys (QA). Each spec (a remote path as given) allows:
//   - one ending in "." or "..", or the top ("." for "host/"): anything,
//     its contents being what was asked for;
//   - without a tree (no -r, no --resume): a name, or a path's last
//     element, that the spec's last element names, as it is or as a
//     wildcard matching it;
//   - with a tree: a name whose first element is so named (the tree
//     under it), after the spec's own directories where the server
//     sends them first (a classic Kermit's paths from its directory).
//
// A classic Kermit converts names (C-Kermit sends HELLO.C for hello.c,
// and may change other characters): with one, names are compared
// folded (upper case, other than letters and digits as one character).
func expectNames(specs []string, tree, classic bool) func(name string) error {
	for _, s := range specs {
		if b := path.Base(s); b == "." || b == ".." || b == "/" {
			return nil
		}
	}
	return func(name string) error {
		for _, s := range specs {
			if nameAsked(s, name, tree, classic) {
				return nil
			}
		}
		return errNotAsked
	}
}

// nameAsked reports whether spec asks for name.
func nameAsked(spec, name string, tree, classic bool) bool {
	spec = strings.TrimRight(spec, "/")
	base := path.Base(spec)
	if !tree {
		return elementNamed(base, path.Base(name), classic)
	}
	// A classic server's paths may be absolute (asked HOST//abs/dir/*,
	// C-Kermit sends /abs/dir/f), or begin with the spec's directories
	// (its paths from its own directory): compared from past them too.
	rel := strings.TrimPrefix(name, "/")
	dir := strings.Trim(path.Dir(spec), "/")
	dirPattern := true
	if hasEscape(dir) && !hasWildcard(dir) {
		// Its wildcard characters are its own (QA r: d\[1\]/x from
		// C-Kermit, the file asked for, was refused).
		dir, dirPattern = unescapeName(dir), false
	}
	if classic && rel != name && dir != "." && dir != "" && !strings.HasPrefix(fold(rel, true, false), fold(dir, true, dirPattern)+"/") {
		return false // an absolute path, not under what was asked for
	}
	if dir != "." && dir != "" {
		if rest, ok := strings.CutPrefix(fold(rel, classic, false), fold(dir, classic, dirPattern)+"/"); ok {
			if treeUnder(base, rel[len(rel)-len(rest):], classic) {
				return true
			}
			if classic {
				// Its path from the top: judged from past the spec's
				// directories only (a wildcard base would name their
				// first element too).
				return false
			}
		}
	}
	return treeUnder(base, rel, classic)
}

// treeUnder reports whether rel is in the tree a spec's last element,
// base, asks for: under an entry base names; or, from a classic Kermit,
// whose GET /RECURSIVE applies a wildcard at every level (C-Kermit's
// -r dir/*.txt brings dir/sub/f.txt), a file base names at any depth,
// through no directory with a leading dot the pattern has not.
func treeUnder(base, rel string, classic bool) bool {
	first, _, deeper := strings.Cut(rel, "/")
	if elementNamed(base, first, classic) {
		return true
	}
	if !deeper || !classic || !hasWildcard(base) {
		return false
	}
	elems := strings.Split(rel, "/")
	for _, e := range elems[:len(elems)-1] {
		if e == "" || e == "." || e == ".." || strings.HasPrefix(e, ".") && !strings.HasPrefix(base, ".") {
			return false
		}
	}
	return elementNamed(base, elems[len(elems)-1], classic)
}

// elementNamed reports whether pattern (a spec's last element: a name,
// or a wildcard) names elem. From a classic Kermit a name may come in
// another case (C-Kermit sends HELLO.C for hello.c), and converted
// (other characters as one); as it was asked for (a Unix Kermit asked
// for literal names) it is compared as it is first, so that brackets
// and ranges keep their meaning (QA: a[1].txt and file[1-3].txt were
// refused).
func elementNamed(pattern, elem string, classic bool) bool {
	if elem == "" || elem == "." || elem == ".." {
		return false
	}
	if hasUnescaped(pattern, "{") {
		// C-Kermit's {a,b} alternatives, which path.Match has not: any
		// name of the directory asked for.
		return true
	}
	if hasEscape(pattern) {
		// Wildcards made literal (escape.go): path.Match reads the
		// escapes as the user meant them.
		lit := unescapeName(pattern)
		return lit == elem || globMatch(pattern, elem) ||
			classic && (strings.EqualFold(lit, elem) || fold(lit, true, false) == fold(elem, true, false))
	}
	if pattern == elem || classic && (strings.EqualFold(pattern, elem) || fold(pattern, true, true) == fold(elem, true, false)) {
		return true
	}
	if strings.HasPrefix(elem, ".") && !strings.HasPrefix(pattern, ".") {
		// A wildcard takes a leading dot only from one of its own, as
		// shells and servers match it: "*" brings no .bashrc.
		return false
	}
	if globMatch(pattern, elem) {
		return true
	}
	return classic && (globMatch(strings.ToUpper(pattern), strings.ToUpper(elem)) || globMatch(fold(pattern, true, true), fold(elem, true, false)))
}

// globMatch is path.Match, with [!...] as [^...] (as shells and kerf's
// --exclude have it), false for a malformed pattern.
func globMatch(pattern, name string) bool {
	ok, err := path.Match(kermit.GlobClasses(pattern), name)
	return err == nil && ok
}

// fold is s as compared with a classic Kermit's converted names: upper
// case, and every byte other than a letter or digit (or, in a pattern,
// a wildcard, and what a bracket holds) as "_". Unchanged when not
// classic.
func fold(s string, classic, pattern bool) string {
	if !classic {
		return s
	}
	b := []byte(s) // byte for byte: a fold is as long as what it folds
	inBracket := false
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
			b[i] = c
		}
		switch {
		case 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '/':
		case pattern && c == '[':
			inBracket = true
		case pattern && c == ']':
			inBracket = false
		case pattern && (inBracket || c == '*' || c == '?'):
		default:
			b[i] = '_'
		}
	}
	return string(b)
}
