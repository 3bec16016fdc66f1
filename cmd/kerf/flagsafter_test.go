package main

import (
	"slices"
	"strings"
	"testing"
)

// Flags after the arguments move before them, global ones before the
// command; "--" keeps what follows as arguments.
func TestFlagsFirst(t *testing.T) {
	app := newApp()
	for _, c := range []struct{ in, want []string }{
		{[]string{"send", "a.txt", "h/d", "--resume"}, []string{"send", "--resume", "a.txt", "h/d"}},
		{[]string{"send", "dir", "h/", "-r", "--streams", "4"}, []string{"send", "-r", "--streams", "4", "dir", "h/"}},
		{[]string{"get", "h/a", ".", "--json", "--resume"}, []string{"--json", "get", "--resume", "h/a", "."}},
		{[]string{"-q", "ls", "h/", "--log-level=debug"}, []string{"-q", "--log-level=debug", "ls", "h/"}},
		{[]string{"user", "add", "alice", "--root", "/srv", "--password-stdin"}, []string{"user", "add", "--root", "/srv", "--password-stdin", "alice"}},
		{[]string{"user", "key", "add", "bob", "--state", "/s", "sha256:x"}, []string{"user", "key", "add", "--state", "/s", "bob", "sha256:x"}},
		{[]string{"send", "--", "-odd", "h/", "-r"}, []string{"send", "--", "-odd", "h/", "-r"}},
		{[]string{"send", "a", "--", "-odd", "h/"}, []string{"send", "--", "a", "-odd", "h/"}},
		{[]string{"send", "a", "h/", "--nonsense"}, []string{"send", "--nonsense", "a", "h/"}},
		{[]string{"send", "a", "-", "h/"}, []string{"send", "a", "-", "h/"}},
		{[]string{"help", "send", "--json"}, []string{"help", "send", "--json"}},
		// --help is about the command: an argument would be taken for a
		// help topic ("No help topic for '/'").
		{[]string{"send", "-r", "/", "x", "--help"}, []string{"send", "-r", "--help"}},
		{[]string{"serial", "send", "a", "-h"}, []string{"serial", "send", "-h"}},
		{[]string{"serial", "send", "--line", "/dev/x", "a", "--speed", "9600"}, []string{"serial", "send", "--line", "/dev/x", "--speed", "9600", "a"}},
		{[]string{"user", "--json", "list"}, []string{"--json", "user", "list"}},
		{[]string{"send", "a", "--generate-bash-completion"}, []string{"send", "a", "--generate-bash-completion"}},
		{[]string{"send", "a", "h/", "-r", "--generate-bash-completion"}, []string{"send", "-r", "a", "h/", "--generate-bash-completion"}},
	} {
		got, err := flagsFirst(app, append([]string{"kerf"}, c.in...))
		if err != nil || !slices.Equal(got[1:], c.want) {
			t.Errorf("%q: got %q, %v; want %q", c.in, got[1:], err, c.want)
		}
	}
	// A trailing flag without its value would take an argument for it.
	if _, err := flagsFirst(app, []string{"kerf", "user", "add", "alice", "--root"}); err == nil || !strings.Contains(err.Error(), "see kerf user add --help") {
		t.Errorf("a trailing --root without a value: %v", err)
	}
}
