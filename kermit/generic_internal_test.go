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
