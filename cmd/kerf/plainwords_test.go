package main

import "testing"

func TestPlainWords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"kermit: peer error: kerf: the server is shutting down (kermit: sending big300: EOF)",
			"the peer says: the server is shutting down (kermit: sending big300: EOF)"},
		// A file called kerf keeps its name: the peer's prefix goes once.
		{"kermit: peer error: kerf: kerf: no such file or directory", "the peer says: kerf: no such file or directory"},
		// A classic peer's own words stay as they are.
		{"kermit: peer error: Refused: framing: x", "the peer says: Refused: framing: x"},
		// After the command's own words (QA ao).
		{"rm logs/a[1].txt: kermit: peer error: kerf: logs/a[1].txt: no such file or directory",
			"rm logs/a[1].txt: the peer says: logs/a[1].txt: no such file or directory"},
		// Not a peer's: untouched.
		{"control: login refused: kerf: login failed", "control: login refused: kerf: login failed"},
		{"auth: x", "auth: x"},
		{"", ""},
	} {
		if got := plainWords(tc.in); got != tc.want {
			t.Errorf("plainWords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
