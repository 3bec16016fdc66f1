package kermit

import (
	"reflect"
	"strings"
	"testing"
)

func TestGenericArgsRoundTrip(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"a"},
		{"from", "to"},
		{strings.Repeat("x", 94)},
		{strings.Repeat("d", 150) + "/e", "short"},
		{strings.Repeat("y", 1000)},
		{"", "foo"}, // an empty argument before another (mv HOST/ ...)
		{"", "", "x"},
		{"a", ""},
		{"", strings.Repeat("z", 300)},
	} {
		enc := encodeGenericArgs('C', args)
		got := parseGenericArgs(enc[1:])
		if len(args) == 0 && len(got) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, args) {
			t.Errorf("args %q came back as %q", args, got)
		}
	}
	// C-Kermit's form: REMOTE CD with one short argument.
	if got := parseGenericArgs([]byte("$/tmp")); !reflect.DeepEqual(got, []string{"/tmp"}) {
		t.Errorf("C-Kermit argument parsed as %q", got)
	}
}

// Whatever a client passes, the server's argument is that value: braces
// a C-Kermit adds for grouping come off, but a name or password that is
// itself in braces stays whole.
func TestGroupArgRoundTrip(t *testing.T) {
	for _, a := range []string{"", "x", "{", "}", "{}", "{x}", "{{x}}", "{x", "x}", "{a} {b}", "a b", "{my password}"} {
		if got := ungroupArg(groupArg(a)); got != a {
			t.Errorf("%q came back as %q", a, got)
		}
	}
	if got := ungroupArg("{dir with spaces}"); got != "dir with spaces" {
		t.Errorf("C-Kermit's grouping braces stayed: %q", got)
	}
}
