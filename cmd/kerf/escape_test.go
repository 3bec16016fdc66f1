package main

import (
	"strconv"
	"strings"
	"testing"
)

// A remote path element that is one whole Go-quoted string, as ls
// shows a name that needs quoting, stands for that name, its escapable
// characters escaped; anything else is left as it is.
func TestQuotedElements(t *testing.T) {
	for _, c := range []struct{ in, want, name string }{
		{`in/"tab\tx"`, "in/tab\tx", "in/tab\tx"},
		{`"sp ace*"/f`, `sp\ ace\*/f`, "sp ace*/f"},
		{`d/"\"q"`, `d/"q`, `d/"q`},
		{`d/"a\\b"`, `d/a\\b`, `d/a\b`},
		{`d/"\xff\xfe"`, "d/\xff\xfe", "d/\xff\xfe"},
		{`d/"q`, `d/"q`, `d/"q`},                // not a whole quoted string
		{`d/"bad\q"`, `d/"bad\q"`, `d/"bad\q"`}, // not Go's escapes
		{`d/""`, `d/""`, `d/""`},                // no name
		{`d/".."`, `d/".."`, `d/".."`},          // not a way up
		{`d/"a/b"`, `d/a/b`, `d/a/b`},
		{`"d/trail "/`, `d/trail\ /`, `d/trail /`}, // ls -R quotes a path
		{`"a"b/c`, `"a"b/c`, `"a"b/c`},             // ends mid-element
		{`plain/a*.txt`, `plain/a*.txt`, `plain/a*.txt`},
	} {
		got := quotedElements(c.in)
		if got != c.want {
			t.Errorf("quotedElements(%q) = %q, want %q", c.in, got, c.want)
		}
		if n := unescapeName(got); n != c.name {
			t.Errorf("unescapeName(quotedElements(%q)) = %q, want %q", c.in, n, c.name)
		}
	}
}

// Only escaped wildcard characters in a directory, before a pattern,
// are refused for a classic server: an escaped space is a name's
// (review: 'my\ dir/*' was refused).
func TestClassicDirPattern(t *testing.T) {
	for _, c := range []struct {
		rp      string
		refused bool
	}{
		{`d\[1\]/*`, true},
		{`a/d\*/x?`, true},
		{`d\[1\]/x`, false},
		{`my\ dir/*`, false},
		{`back\\sl/*`, false},
		{`plain/*`, false},
		{`d[1]/*`, false}, // not escaped: a pattern the user meant
	} {
		if err := classicDirPattern(c.rp, c.rp); (err != nil) != c.refused {
			t.Errorf("classicDirPattern(%q) = %v, want refused %v", c.rp, err, c.refused)
		}
	}
}

// A remote path as a user may type it: quotedElements never fails, and
// a name quoted as ls quotes it always comes back as that name.
func FuzzQuotedElements(f *testing.F) {
	for _, s := range []string{`in/"tab\tx"`, `"d/trail "/`, `d/"\"q"`, `"a"b/c`, `"\xff"`, `""/""`, `d\[1\]/*`} {
		f.Add(s, "name")
	}
	f.Fuzz(func(t *testing.T, rp, name string) {
		_ = unescapeName(quotedElements(rp))
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return
		}
		if got := unescapeName(quotedElements("dir/" + strconv.Quote(name))); got != "dir/"+name {
			t.Errorf("%q quoted came back as %q", name, got)
		}
	})
}
