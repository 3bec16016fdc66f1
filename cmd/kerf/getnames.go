package main

import (
	"errors"
	"path"
	"strings"
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
	first, _, _ := strings.Cut(name, "/")
	if elementNamed(base, first, classic) {
		return true
	}
	// A classic server's paths may begin with the spec's directories.
	if dir := path.Dir(spec); dir != "." && dir != "/" {
		dir = strings.TrimPrefix(dir, "/")
		if rest, ok := strings.CutPrefix(fold(name, classic, false), fold(dir, classic, true)+"/"); ok {
			first, _, _ := strings.Cut(rest, "/")
			return elementNamed(fold(base, classic, true), first, false)
		}
	}
	return false
}

// elementNamed reports whether pattern (a spec's last element: a name,
// or a wildcard) names elem.
func elementNamed(pattern, elem string, classic bool) bool {
	if elem == "" || elem == "." || elem == ".." {
		return false
	}
	if strings.Contains(pattern, "{") {
		// C-Kermit's {a,b} alternatives, which path.Match has not: any
		// name of the directory asked for.
		return true
	}
	p, e := fold(pattern, classic, true), fold(elem, classic, false)
	if p == e {
		return true
	}
	if strings.HasPrefix(elem, ".") && !strings.HasPrefix(pattern, ".") {
		// A wildcard takes a leading dot only from one of its own, as
		// shells and servers match it: "*" brings no .bashrc.
		return false
	}
	ok, err := path.Match(p, e)
	return err == nil && ok
}

// fold is s as compared with a classic Kermit's converted names: upper
// case, and every byte other than a letter or digit (or, in a pattern,
// a wildcard) as "_". Unchanged when not classic.
func fold(s string, classic, pattern bool) string {
	if !classic {
		return s
	}
	b := []byte(strings.ToUpper(s))
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '/':
		case pattern && (c == '*' || c == '?' || c == '[' || c == ']'):
		default:
			b[i] = '_'
		}
	}
	return string(b)
}
