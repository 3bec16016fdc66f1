package main

import (
	"path"
	"strconv"
	"strings"
)

// A remote name's wildcard characters may be escaped with a backslash,
// as in a shell: `kerf get 'host/a\[1\].txt' -` asks for the file
// a[1].txt and nothing else, so that it may go to standard output or to
// a name of the user's, which a wildcard may not. The escapes are this
// side's: the server is sent the name without them (it refuses
// backslashes in names, and takes a name that exists literally before
// it tries it as a pattern), and this side accepts only the file so
// named. Decided in docs/architecture.md ("A GET name that exists is
// taken literally").

// escapable are the characters a backslash escapes, as a shell's would:
// the wildcards, the brackets and braces that close them, a space and
// the backslash itself. Before any other character a backslash is
// itself, so that a name with one, as ls shows it, can be given back as
// it is (QA: rm of a server's 't\y' removed 'ty', or nothing).
const escapable = `*?[]{} \`

// isEscape reports whether name has an escape at i: a backslash before
// an escapable character.
func isEscape(name string, i int) bool {
	return name[i] == '\\' && i+1 < len(name) && strings.IndexByte(escapable, name[i+1]) >= 0
}

// unescapeName is name without its escapes: each backslash before an
// escapable character gives that character as itself; any other
// backslash stays.
func unescapeName(name string) string {
	if !strings.Contains(name, `\`) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if isEscape(name, i) {
			i++
		}
		b.WriteByte(name[i])
	}
	return b.String()
}

// hasEscapedWildcard reports whether name has an escaped wildcard
// character, bracket or brace (not an escaped space or backslash).
func hasEscapedWildcard(name string) bool {
	for i := 0; i < len(name); i++ {
		if isEscape(name, i) {
			if strings.IndexByte("*?[]{}", name[i+1]) >= 0 {
				return true
			}
			i++
		}
	}
	return false
}

// classicDirPattern refuses, for a classic Kermit server, a remote path
// whose directory has escaped wildcard characters and whose last element
// is a pattern: such a server takes no escapes, and with a wildcard
// after it matches the directory's brackets as a pattern too (QA r:
// d[1]/* fetched d1's files). Refused, not guessed at; a name without a
// wildcard it takes as it is.
func classicDirPattern(rp, given string) error {
	if dir := path.Dir(rp); hasEscapedWildcard(dir) && hasWildcard(path.Base(rp)) {
		return usageErr("%s: a classic Kermit server cannot be asked for the files of a directory whose name has wildcard characters (%s): it takes them as a pattern; name a file in it, or fetch from a kerf server", given, unescapeName(dir))
	}
	return nil
}

// hasEscape reports whether name has an escape.
func hasEscape(name string) bool {
	for i := 0; i < len(name); i++ {
		if isEscape(name, i) {
			return true
		}
	}
	return false
}

// hasWildcard reports whether a GET name may be taken as a pattern (by
// kerf: * ? [; by C-Kermit also {a,b}): it has one of them unescaped.
func hasWildcard(name string) bool { return hasUnescaped(name, "*?[{") }

// hasUnescaped reports whether name has one of chars not escaped.
func hasUnescaped(name, chars string) bool {
	for i := 0; i < len(name); i++ {
		switch {
		case isEscape(name, i):
			i++
		case strings.IndexByte(chars, name[i]) >= 0:
			return true
		}
	}
	return false
}

// remoteName is what a remote command (ls, rm, mkdir, rmdir, mv) sends
// for the path rp the user gave: rp without its escapes, and whether its
// last element had escaped wildcards, so that a server that takes a
// missing name for a pattern (REMOTE DELETE, DIRECTORY) must be asked to
// take it as it is (kermit.Session.TakeNextLiterally). Only the last
// element is ever a pattern; an escape in a directory is just dropped.
// A last element with both escaped and unescaped wildcards cannot be
// said to a server and is refused.
func remoteName(rp string) (name string, literal bool, err error) {
	base := rp[strings.LastIndexByte(rp, '/')+1:]
	name = unescapeName(rp)
	if !hasEscape(base) {
		return name, false, nil
	}
	if hasWildcard(base) {
		return "", false, usageErr("%s: a name with escaped and unescaped wildcards both cannot be sent (a pattern is matched by the server, which takes no escapes)", rp)
	}
	return name, strings.ContainsAny(path.Base(name), "*?[{"), nil
}

// quotedElements is the remote path rp with each run of elements that
// ls shows quoted (a name with a control character, a leading or
// trailing space, a leading double quote, bytes not UTF-8: "tab\tx",
// Go's escapes, protocol.md §8; ls -R quotes a whole path) replaced by
// what it quotes, its escapable characters escaped: a name is given
// back as ls shows it (QA r). A quoted string must run from an
// element's start to an element's end; anything else stays as it is,
// so a name that merely begins with a quote is still itself.
func quotedElements(rp string) string {
	if !strings.Contains(rp, `"`) {
		return rp
	}
	var b strings.Builder
	for i := 0; i < len(rp); {
		if rp[i] == '"' {
			q, err := strconv.QuotedPrefix(rp[i:])
			if next := i + len(q); err == nil && (next == len(rp) || rp[next] == '/') {
				if name, _ := strconv.Unquote(q); name != "" && name != "." && name != ".." {
					b.WriteString(escapeName(name))
					i = next
					continue
				}
			}
		}
		end := strings.IndexByte(rp[i:], '/')
		if end < 0 {
			b.WriteString(rp[i:])
			break
		}
		b.WriteString(rp[i : i+end+1])
		i += end + 1
	}
	return b.String()
}

// escapeName is name (or a path: "/" is not escapable) with each
// escapable character escaped: the inverse of unescapeName.
func escapeName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if strings.IndexByte(escapable, name[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(name[i])
	}
	return b.String()
}
