package kermit

import (
	"path"
	"strings"
	"testing"
)

// The literal ends an exclusion checks first never turn away a name its
// pattern matches.
func FuzzExclusionPrefilter(f *testing.F) {
	for _, s := range [][2]string{
		{"*.tmp", "a.tmp"}, {"nomatch1*.tmp", "nomatch12.tmp"}, {"d00[0-8]?", "d0071"},
		{"[!a]bc", "xbc"}, {"a?c", "abc"}, {"core", "core"}, {"re\\*al", "re*al"},
		{"raw/*.jpg", "raw/a.jpg"}, {"a]b", "a]b"}, {"x[]]y", "x]y"}, {"*", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		e, err := parseExclusion(pattern)
		if err != nil {
			return
		}
		ok, _ := path.Match(e.pattern, name)
		passes := len(name) >= len(e.prefix)+len(e.suffix) && strings.HasPrefix(name, e.prefix) && strings.HasSuffix(name, e.suffix)
		if ok && !passes {
			t.Fatalf("pattern %q (prefix %q, suffix %q) matches %q, which the prefilter turns away", e.pattern, e.prefix, e.suffix, name)
		}
	})
}
