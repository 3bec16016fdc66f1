package framing

import (
	"slices"
	"testing"
)

func TestSplitSpec(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"a b", []string{"a", "b"}},
		{"  a   b ", []string{"a", "b"}},
		{"{my file} b", []string{"my file", "b"}},
		{"a{b}c one", []string{"a{b}c", "one"}}, // braces inside a name
		{"br{ace}s[x].bin sz", []string{"br{ace}s[x].bin", "sz"}},
		{"{x}", []string{"x"}},
		{"{{x}} y", []string{"{x}", "y"}},   // a name that begins with {
		{"{a}b c}", []string{"a}b c"}},      // the first } that ends a word
		{"{open b", []string{"{open", "b"}}, // no end: literal
		{"{} a", []string{"a"}},
		{"", nil},
	} {
		if got := SplitSpec(c.in); !slices.Equal(got, c.want) {
			t.Errorf("SplitSpec(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// SplitSpec never panics, and gives non-empty words no longer than the
// spec they came from.
func FuzzSplitSpec(f *testing.F) {
	for _, s := range []string{"a b", "{my file} b", "a{b}c one", "{{x}} y", "{a}b c}", "{open", "}{", "{ }"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		n := 0
		for _, w := range SplitSpec(spec) {
			if w == "" {
				t.Fatalf("SplitSpec(%q): an empty word", spec)
			}
			n += len(w)
		}
		if n > len(spec) {
			t.Fatalf("SplitSpec(%q): %d bytes of words", spec, n)
		}
	})
}

// JoinSpec's filespecs (known answers: braces for a space or a leading
// "{", none elsewhere), and whether the names come back whole from
// SplitSpec.
func TestJoinSpec(t *testing.T) {
	for _, c := range []struct {
		names []string
		spec  string
		ok    bool
	}{
		{[]string{"plain", "a{b}c", "{x}", "my file", "{a b}", "br{ace}s[x].bin", "d/{e}", "x}", "my {odd} file"},
			"plain a{b}c {{x}} {my file} {{a b}} br{ace}s[x].bin d/{e} x} {my {odd} file}", true},
		{[]string{"a} {b", "{x}"}, "{a} {b} {{x}}", false}, // splits as "a", "b", "{x}"
		{[]string{"a} {b"}, "{a} {b}", false},
		{[]string{"x} y", "a"}, "{x} y} a", false},
		{[]string{"one"}, "one", true},
	} {
		if spec, ok := JoinSpec(c.names); spec != c.spec || ok != c.ok {
			t.Errorf("JoinSpec(%q) = %q, %v; want %q, %v", c.names, spec, ok, c.spec, c.ok)
		}
	}
}
