package main

import (
	"slices"
	"testing"

	"kerf/framing"
)

// A get stores only names it asked for: the table is what each spec,
// with and without a tree, lets through.
func TestExpectNames(t *testing.T) {
	for _, c := range []struct {
		specs   []string
		tree    bool
		classic bool
		name    string
		ok      bool
	}{
		{[]string{"docs/report.pdf"}, false, false, "report.pdf", true},
		{[]string{"docs/report.pdf"}, false, false, ".bashrc", false},
		{[]string{"docs/report.pdf"}, false, false, "Report.pdf", false},
		{[]string{"*.txt"}, false, false, "a.txt", true},
		{[]string{"*.txt"}, false, false, "a.log", false},
		{[]string{"*"}, false, false, ".profile", false},
		{[]string{".*"}, false, false, ".profile", true},
		{[]string{"st*ar"}, false, false, "st*ar", true},
		{[]string{"a.txt", "b/*.log"}, false, false, "x.log", true},
		{[]string{"photos"}, true, false, "photos", true},
		{[]string{"photos"}, true, false, "photos/a/b.jpg", true},
		{[]string{"photos/"}, true, false, "photos/.hidden", true},
		{[]string{"photos"}, true, false, ".ssh/authorized_keys", false},
		{[]string{"photos"}, true, false, ".ssh", false},
		{[]string{"photos"}, true, false, "photosX/a", false},
		{[]string{"w/*"}, true, false, "sub/f", true},
		{[]string{"w/*"}, true, false, ".git/config", false},
		{[]string{"photos/."}, true, false, ".bashrc", true}, // the contents were asked for
		{[]string{"."}, true, false, "anything/at/all", true},
		{[]string{"a", "."}, false, false, "x", true},
		// A classic Kermit's converted names.
		{[]string{"report.pdf"}, false, true, "REPORT.PDF", true},
		{[]string{"my file.tar.gz"}, false, true, "my_file_tar.gz", true},
		{[]string{"*.txt"}, false, true, "a.txt", true},
		{[]string{"report.pdf"}, false, true, ".bashrc", false},
		{[]string{"dir/*"}, true, true, "dir/sub/x", true},
		{[]string{"dir/*"}, true, true, ".ssh/x", false},
		{[]string{"{a,b}.txt"}, false, true, "a.txt", true},
		// From a Unix Kermit, names come as asked (QA: refused before).
		{[]string{"a[1].txt"}, false, true, "a[1].txt", true},
		{[]string{"brk[et"}, false, true, "brk[et", true},
		{[]string{"file[1-3].txt"}, false, true, "file2.txt", true},
		{[]string{"file[1-3].txt"}, false, true, "file4.txt", false},
		{[]string{"*[1-3].txt"}, false, true, "file2.txt", true},
		{[]string{"h?llo.txt"}, false, true, "héllo.txt", true},
		{[]string{"file[!1].txt"}, false, false, "file2.txt", true},
		{[]string{"file[!1].txt"}, false, false, "file1.txt", false},
		// Wildcards escaped: that name alone (escape.go).
		{[]string{`a\[1\].txt`}, false, false, "a[1].txt", true},
		{[]string{`a\[1\].txt`}, false, false, "a1.txt", false},
		{[]string{`s\*`}, false, false, "s*", true},
		// In a directory of the spec, from a classic Kermit's tree
		// (QA r: the file asked for was refused).
		{[]string{`d\[1\]/x`}, true, true, "d[1]/x", true},
		{[]string{`d\[1\]/x`}, true, true, "d1/x", false},
		{[]string{`d\[1\]/x`}, true, false, "x", true},
		{[]string{`s\*`}, false, false, "sx", false},
		{[]string{`\{a,b\}`}, false, false, "a", false},
		{[]string{`\{a,b\}`}, false, false, "{a,b}", true},
		{[]string{`a\[1\].txt`}, false, true, "A[1].TXT", true},
		{[]string{`d\[1\]`}, true, false, "d[1]/x", true},
		{[]string{`d\[1\]`}, true, false, "d1/x", false},
		// C-Kermit's absolute paths for HOST//abs/dir/*.
		{[]string{"/tmp/ck/dir/*"}, true, true, "/tmp/ck/dir/f1.txt", true},
		{[]string{"/tmp/ck/dir/*"}, true, true, "/tmp/ck/other/f1.txt", false},
		{[]string{"/tmp/ck/file"}, true, true, "/tmp/ck/file", true},
		// C-Kermit's GET /RECURSIVE applies a wildcard at every level.
		{[]string{"dir/*.txt"}, true, true, "dir/sub/f2.txt", true},
		{[]string{"*.txt"}, true, true, "sp ace/in side.txt", true},
		{[]string{"*.txt"}, true, true, "uni/日本.txt", true},
		{[]string{"*.txt"}, true, true, "dir/f1.log", false},
		{[]string{"*.txt"}, true, true, ".ssh/x.txt", false},
		{[]string{"*"}, true, true, "d/.ssh/authorized_keys", true}, // the tree under d, asked for
		{[]string{"*.txt"}, true, true, "d/.ssh/x.txt", false},
		{[]string{"*.txt"}, true, false, "dir/f1.txt", false}, // a kerf server sends no such thing
	} {
		check := expectNames(c.specs, c.tree, c.classic)
		ok := check == nil || check(c.name) == nil
		if ok != c.ok {
			t.Errorf("specs %q (tree %v, classic %v), name %q: taken %v, want %v", c.specs, c.tree, c.classic, c.name, ok, c.ok)
		}
	}
}

// Escapes are this side's: the server is sent the names without them,
// and an escaped wildcard does not count as one.
func TestEscapedNamesToServer(t *testing.T) {
	names := []string{`a\[1\].txt`, `s\*`, "plain", `my\ file`}
	want := []string{"a[1].txt", "s*", "plain", "my file"}
	var got []string
	for _, g := range specGroups(names, false) {
		got = append(got, framing.SplitSpec(g)...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("specGroups sent %q, want %q", got, want)
	}
	if got := framing.SplitSpec(quoteSpec(names)); !slices.Equal(got, want) {
		t.Errorf("quoteSpec sent %q, want %q", got, want)
	}
	for _, c := range []struct {
		name string
		wild bool
	}{{`a\[1\]`, false}, {`a\[1]*`, true}, {"a[1]", true}, {`x\\*`, true}, {`x\`, false}} {
		if hasWildcard(c.name) != c.wild {
			t.Errorf("hasWildcard(%q) = %v", c.name, !c.wild)
		}
	}
	// A backslash escapes the wildcards, brackets, braces, a space and
	// itself; before anything else it is itself (QA: the name ls showed
	// as t\y could not be given back).
	for _, c := range []struct{ in, out string }{
		{`a\[1\]\\b\`, `a[1]\b\`},
		{`t\y`, `t\y`},
		{`s\x\*`, `s\x*`},
		{`my\ file`, "my file"},
		{`\{a,b\}`, "{a,b}"},
		{`c:\dir\new`, `c:\dir\new`},
	} {
		if got := unescapeName(c.in); got != c.out {
			t.Errorf("unescapeName(%q) = %q, want %q", c.in, got, c.out)
		}
		if hasEscape(c.in) != (c.in != c.out) {
			t.Errorf("hasEscape(%q) = %v", c.in, !(c.in != c.out))
		}
	}
}
