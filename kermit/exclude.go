package kermit

import (
	"fmt"
	"path"
	"strings"
)

// Exclusions are the patterns of --exclude, as rsync takes its simple
// ones, matched against the names files travel under (the F packet's,
// "photos/raw/a.jpg" for `send -r photos`):
//
//   - a pattern with no slash matches any one element of a name: "*.tmp",
//     ".git", "core";
//   - one with slashes inside matches the last elements of a name, as
//     many as it has: "raw/*.jpg" matches "photos/raw/a.jpg";
//   - a leading slash anchors it at the top of the names: "/photos/raw"
//     matches "photos/raw" and not "old/photos/raw";
//   - a trailing slash matches directories only: "cache/".
//
// Elements match as path.Match has them ('*' and '?' stop at a slash,
// [...] classes, "[!...]" as rsync writes "[^...]", '\' quotes); there
// is no "**" and no "[[:digit:]]". An excluded directory takes all that is
// under it. The sender leaves out what its own exclusions match; for a
// GET the client hands its patterns to a kerf server (REMOTE SET
// kerf-exclude, protocol.md §8), which leaves them out of what it sends.
type Exclusions []exclusion

type exclusion struct {
	pattern  string // without its leading and trailing slash
	elements int    // how many name elements it matches
	anchored bool   // leading slash: from the top of the names
	dirOnly  bool   // trailing slash: directories only
	// prefix and suffix are the pattern's literal ends (none if it has
	// an escape): what a name must begin and end with to match, checked
	// before path.Match (QA w: 252 patterns cost 12.6 CPU-s for 200,000
	// files, rsync 0.47; 40-54 µs a name, BenchmarkExcludes).
	prefix, suffix string
}

// maxExclusions and maxExcludeLen bound what a server keeps of a
// client's patterns (and what a client may give).
const (
	maxExclusions = 256
	maxExcludeLen = 1024
)

// excludeParam is kerf's REMOTE SET parameter that adds a pattern to
// the exclusions of the session's next GET.
const excludeParam = "kerf-exclude"

// MaxLocalExclusions bounds the patterns a sender matches itself
// (ParseLocalExclusions); a GET's go to the server, which keeps at most
// 256 (QA w: a send of more than 256 was refused, for no reason of its
// own).
const MaxLocalExclusions = 4096

// ParseExclusions checks patterns, at most 256 (what a server keeps of
// a GET's), and returns them as Exclusions.
func ParseExclusions(patterns []string) (Exclusions, error) {
	return parseExclusions(patterns, maxExclusions)
}

// ParseLocalExclusions is ParseExclusions of a sender's own patterns,
// at most MaxLocalExclusions.
func ParseLocalExclusions(patterns []string) (Exclusions, error) {
	return parseExclusions(patterns, MaxLocalExclusions)
}

func parseExclusions(patterns []string, max int) (Exclusions, error) {
	if len(patterns) > max {
		return nil, fmt.Errorf("%d exclude patterns: at most %d", len(patterns), max)
	}
	var x Exclusions
	for _, p := range patterns {
		e, err := parseExclusion(p)
		if err != nil {
			return nil, err
		}
		x = append(x, e)
	}
	return x, nil
}

// hasDoubleStar reports whether p has two unescaped stars in a row (an
// escaped one, \*, is a star of the name: QA r, \** was refused).
func hasDoubleStar(p string) bool {
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\':
			i++ // what it escapes
		case p[i] == '*' && i+1 < len(p) && p[i+1] == '*':
			return true
		}
	}
	return false
}

func parseExclusion(p string) (exclusion, error) {
	if len(p) > maxExcludeLen {
		return exclusion{}, fmt.Errorf("exclude pattern of %d bytes: at most %d", len(p), maxExcludeLen)
	}
	// rsync's two forms that path.Match would take as something else,
	// silently: refused, with what to write instead.
	switch {
	case hasDoubleStar(p):
		return exclusion{}, fmt.Errorf("exclude pattern %q: ** is not supported (a pattern without / matches at any depth; * stays within one element)", p)
	case strings.Contains(p, "[[:"):
		return exclusion{}, fmt.Errorf("exclude pattern %q: character classes such as [[:digit:]] are not supported (write the characters: [0-9])", p)
	}
	e := exclusion{anchored: strings.HasPrefix(p, "/"), dirOnly: strings.HasSuffix(p, "/")}
	e.pattern = rsyncClasses(strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/"))
	if e.pattern == "" || strings.Contains(e.pattern, "//") {
		return exclusion{}, fmt.Errorf("exclude pattern %q: empty, or an empty element", p)
	}
	if _, err := path.Match(e.pattern, ""); err != nil {
		return exclusion{}, fmt.Errorf("exclude pattern %q: %w", p, err)
	}
	e.elements = strings.Count(e.pattern, "/") + 1
	if !strings.Contains(e.pattern, "\\") {
		if i := strings.IndexAny(e.pattern, "*?["); i >= 0 {
			e.prefix = e.pattern[:i]
			e.suffix = e.pattern[strings.LastIndexAny(e.pattern, "*?]")+1:]
		} else {
			e.prefix = e.pattern // no wildcard: the name itself
		}
	}
	return e, nil
}

// GlobClasses is a pattern with the shell's negated class "[!...]"
// written as path.Match has it, "[^...]": what a GET's wildcard and a
// client's check of the names sent take too.
func GlobClasses(p string) string { return rsyncClasses(p) }

// rsyncClasses is p with rsync's (and the shell's) negated class "[!...]"
// written as path.Match has it, "[^...]".
func rsyncClasses(p string) string {
	b := []byte(p)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\\':
			i++ // the next byte is itself
		case b[i] == '[' && i+1 < len(b) && b[i+1] == '!':
			b[i+1] = '^'
		}
	}
	return string(b)
}

// Excludes says whether name (slash-separated, as files travel; dir:
// it is a directory) is left out: it matches, or a directory above it
// does.
func (x Exclusions) Excludes(name string, dir bool) bool {
	if len(x) == 0 {
		return false
	}
	elems := strings.Split(strings.Trim(name, "/"), "/")
	for i := range elems {
		if x.matches(elems[:i+1], dir || i < len(elems)-1) {
			return true
		}
	}
	return false
}

// matches says whether the name of elems (a directory if dir) matches
// one of the patterns by itself.
func (x Exclusions) matches(elems []string, dir bool) bool {
	for _, e := range x {
		if e.dirOnly && !dir {
			continue
		}
		var tail []string
		switch {
		case e.anchored && len(elems) == e.elements:
			tail = elems
		case !e.anchored && len(elems) >= e.elements:
			tail = elems[len(elems)-e.elements:]
		default:
			continue
		}
		name := tail[0]
		if len(tail) > 1 {
			name = strings.Join(tail, "/")
		}
		if len(name) < len(e.prefix)+len(e.suffix) || !strings.HasPrefix(name, e.prefix) || !strings.HasSuffix(name, e.suffix) {
			continue
		}
		if ok, _ := path.Match(e.pattern, name); ok {
			return true
		}
	}
	return false
}

// Filter returns files less those x excludes.
func (x Exclusions) Filter(files []OutgoingFile) []OutgoingFile {
	if len(x) == 0 {
		return files
	}
	out := files[:0:0]
	for _, f := range files {
		if !x.Excludes(f.Name, f.Dir) {
			out = append(out, f)
		}
	}
	return out
}
