package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"kerf/kermit"
)

// Go's flag package names a long flag with one dash in its errors; kerf
// says it as the help does.
func TestLongFlagsInErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"flag provided but not defined: -bogus", "flag provided but not defined: --bogus"},
		{`invalid value "x" for flag -block-size: parse error`, `invalid value "x" for flag --block-size: parse error`},
		{`invalid boolean value "maybe" for -resume: parse error`, `invalid boolean value "maybe" for --resume: parse error`},
		{"flag provided but not defined: -Q", "flag provided but not defined: -Q"},
		{"flag needs an argument: --idle-timeout", "flag needs an argument: --idle-timeout"},
		{`invalid value "-5" for flag --speed`, `invalid value "-5" for flag --speed`},
		{`invalid value "a -b" for flag -exclude: bad`, `invalid value "a -b" for flag --exclude: bad`},
	} {
		if got := longFlags(tc.in); got != tc.want {
			t.Errorf("longFlags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A duration flag given a bare number is told it needs its unit (QA:
// "parse error"); other parse errors are left as they are.
func TestUnitlessDuration(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`invalid value "90" for flag --idle-timeout: parse error`, `invalid value "90" for flag --idle-timeout: a duration takes its unit (90s, 90m, 90h)`},
		{`invalid value "1.5" for flag --reconnect: parse error`, `invalid value "1.5" for flag --reconnect: a duration takes its unit (1.5s, 1.5m, 1.5h)`},
		{`invalid value "abc" for flag --reconnect: parse error`, `invalid value "abc" for flag --reconnect: parse error`},
		// Not a duration flag: no word of units.
		{`invalid value "1.5" for flag --sessions: parse error`, `invalid value "1.5" for flag --sessions: parse error`},
	} {
		isDuration := func(name string) bool { return name == "idle-timeout" || name == "reconnect" }
		if got := unitHint(tc.in, isDuration); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A server's refusal for want of a login is exit 3, as a refused login
// is (QA s: C-Kermit's "Login required" was exit 4).
func TestLoginRequired(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("ls .: %w", &kermit.PeerError{Msg: "Login required"}), true},
		{transferErr(fmt.Errorf("ls: %w", &kermit.PeerError{Msg: "kerf: login required (REMOTE LOGIN user password)"})), true},
		{&kermit.PeerError{Msg: "File not found"}, false},
		{errors.New("login required"), false}, // not the peer's word
	} {
		if got := loginRequired(tc.err); got != tc.want {
			t.Errorf("loginRequired(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// A flag refused that is a local file's name is told how to be given
// (QA r: "-leading-dash" was only "not defined").
func TestDashFileHint(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("-leading-dash", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if h := dashFileHint("flag provided but not defined: -leading-dash"); !strings.Contains(h, "./-leading-dash") {
		t.Errorf("hint %q, want ./-leading-dash", h)
	}
	if h := dashFileHint("flag provided but not defined: -bogus"); h != "" {
		t.Errorf("hint %q for a flag no file is named", h)
	}
}
