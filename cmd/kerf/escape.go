package main

import "strings"

// A remote name's wildcard characters may be escaped with a backslash,
// as in a shell: `kerf get 'host/a\[1\].txt' -` asks for the file
// a[1].txt and nothing else, so that it may go to standard output or to
// a name of the user's, which a wildcard may not. The escapes are this
// side's: the server is sent the name without them (it refuses
// backslashes in names, and takes a name that exists literally before
// it tries it as a pattern), and this side accepts only the file so
// named. Decided in docs/architecture.md ("A GET name that exists is
// taken literally").

// unescapeName is name without its escapes: each backslash gives the
// character after it as itself (a trailing one is kept).
func unescapeName(name string) string {
	if !strings.Contains(name, `\`) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] == '\\' && i+1 < len(name) {
			i++
		}
		b.WriteByte(name[i])
	}
	return b.String()
}

// hasEscape reports whether name has an escape.
func hasEscape(name string) bool { return strings.Contains(name, `\`) }

// hasWildcard reports whether a GET name may be taken as a pattern (by
// kerf: * ? [; by C-Kermit also {a,b}): it has one of them unescaped.
func hasWildcard(name string) bool { return hasUnescaped(name, "*?[{") }

// hasUnescaped reports whether name has one of chars not escaped.
func hasUnescaped(name, chars string) bool {
	for i := 0; i < len(name); i++ {
		switch {
		case name[i] == '\\':
			i++
		case strings.IndexByte(chars, name[i]) >= 0:
			return true
		}
	}
	return false
}
