package kermit

import (
	"fmt"
	"testing"
)

func TestExclusions(t *testing.T) {
	for _, c := range []struct {
		patterns []string
		name     string
		dir      bool
		want     bool
	}{
		{[]string{"*.tmp"}, "a.tmp", false, true},
		{[]string{"*.tmp"}, "top/sub/a.tmp", false, true},
		{[]string{"*.tmp"}, "top/sub/a.tmpx", false, false},
		{[]string{"*.tmp"}, "x.tmp/inside.txt", false, true}, // a directory so named takes its tree
		{[]string{".git"}, "repo/.git", true, true},
		{[]string{".git"}, "repo/.git/objects/ab/cd", false, true},
		{[]string{".git"}, "repo/.gitignore", false, false},
		{[]string{"raw/*.jpg"}, "photos/raw/a.jpg", false, true},
		{[]string{"raw/*.jpg"}, "photos/raw/deeper/a.jpg", false, false},
		{[]string{"raw/*.jpg"}, "raw/a.jpg", false, true},
		{[]string{"/photos/raw"}, "photos/raw", true, true},
		{[]string{"/photos/raw"}, "photos/raw/a.jpg", false, true},
		{[]string{"/photos/raw"}, "old/photos/raw/a.jpg", false, false},
		{[]string{"/raw"}, "photos/raw/a.jpg", false, false},
		{[]string{"cache/"}, "app/cache", true, true},
		{[]string{"cache/"}, "app/cache/x", false, true},
		{[]string{"cache/"}, "app/cache", false, false}, // a file named cache stays
		{[]string{"core"}, "src/core", false, true},
		{[]string{"core"}, "src/core.c", false, false},
		{[]string{"a?c"}, "abc", false, true},
		{[]string{"a?c"}, "a/c", false, false}, // ? stops at a slash
		{[]string{"[0-9]*.log"}, "logs/2024.log", false, true},
		{[]string{`\*`}, "*", false, true},
		{[]string{`\*`}, "x", false, false},
		{[]string{"*.o", "*.a"}, "lib/x.a", false, true},
		{nil, "anything", false, false},
		{[]string{"*"}, "top", true, true},
		{[]string{"[!a-c]*"}, "d1", false, true}, // rsync's negated class
		{[]string{"[!a-c]*"}, "a1", false, false},
		{[]string{`\[!x]`}, "[!x]", false, true}, // escaped: literal
		{[]string{"[^a-c]*"}, "a1", false, false},
		// An escaped star beside a star is no ** (QA r: refused).
		{[]string{`\**`}, "*lead", false, true},
		{[]string{`\**`}, "lead*", false, false},
		{[]string{`*\**`}, "mid*dle", false, true},
		{[]string{`*\**`}, "middle", false, false},
	} {
		x, err := ParseExclusions(c.patterns)
		if err != nil {
			t.Fatalf("%q: %v", c.patterns, err)
		}
		if got := x.Excludes(c.name, c.dir); got != c.want {
			t.Errorf("%q excludes %q (dir %v) = %v, want %v", c.patterns, c.name, c.dir, got, c.want)
		}
	}
	for _, bad := range []string{"", "/", "//", "a//b", "[", "a/[b", "**/x", "a/**", `\***`, "[[:digit:]]"} {
		if _, err := ParseExclusions([]string{bad}); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}

func TestExclusionsFilter(t *testing.T) {
	x, _ := ParseExclusions([]string{".git", "*.tmp"})
	files := []OutgoingFile{{Name: "r", Dir: true}, {Name: "r/.git", Dir: true}, {Name: "r/.git/HEAD"}, {Name: "r/a.tmp"}, {Name: "r/a.go"}}
	got := x.Filter(files)
	if len(got) != 2 || got[0].Name != "r" || got[1].Name != "r/a.go" {
		t.Errorf("filtered to %v, want r and r/a.go", got)
	}
	if len(files) != 5 || files[2].Name != "r/.git/HEAD" {
		t.Errorf("Filter changed its input: %v", files)
	}
}

// Patterns from anywhere parse or fail, and match or not, without a
// panic; one that parses is the same alone as in a list.
func FuzzExclusions(f *testing.F) {
	f.Add("*.tmp", "a/b.tmp", false)
	f.Add("/top/[a-z]?/", "top/ab", true)
	f.Add(`\`, "x", false)
	f.Fuzz(func(t *testing.T, pattern, name string, dir bool) {
		x, err := ParseExclusions([]string{pattern})
		if err != nil {
			return
		}
		got := x.Excludes(name, dir)
		y, _ := ParseExclusions([]string{"no-such-name-\x00", pattern})
		if y.Excludes(name, dir) != got {
			t.Errorf("%q on %q: alone %v, in a list %v", pattern, name, got, !got)
		}
	})
}

// A sender matches its own patterns: up to MaxLocalExclusions; a GET's
// go to the server, which keeps 256.
func TestExclusionBounds(t *testing.T) {
	pats := make([]string, 300)
	for i := range pats {
		pats[i] = fmt.Sprintf("p%d*", i)
	}
	if _, err := ParseExclusions(pats); err == nil {
		t.Error("ParseExclusions took 300 patterns")
	}
	x, err := ParseLocalExclusions(pats)
	if err != nil || !x.Excludes("dir/p299x", false) {
		t.Errorf("ParseLocalExclusions of 300: %v", err)
	}
	if _, err := ParseLocalExclusions(make([]string, MaxLocalExclusions+1)); err == nil {
		t.Error("ParseLocalExclusions took more than its bound")
	}
}
