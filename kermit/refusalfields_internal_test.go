package kermit

import (
	"net"
	"testing"
)

// A refusal's "m" fields are read one after another to the end; any
// field that does not fit its length makes the whole unreadable (the
// tags are then named instead), never an out-of-range read.
func TestRefusalFields(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	s := NewSession(a, DefaultConfig())
	defer s.Close()
	field := func(text string) string { return "m" + string(rune(32+len(text))) + text }
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{field("no room"), "no room", true},
		{field("one, ") + field("two"), "one, two", true},
		{field(""), "", false},
		{field("") + field("after an empty one"), "after an empty one", true},
		{"m", "", false},
		{"m(short", "", false},                // says 8, has 5
		{field("whole") + "m", "", false},     // a dangling tag
		{field("whole") + "x!abc", "", false}, // not an m field
		{"m\x1fbelow zero", "", false},        // a length below zero
		{field("whole") + "m\x7eshort", "", false},
	} {
		got, ok := s.refusalFields(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("refusalFields(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
