package main

import "testing"

func TestPlainWords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"kermit: peer error: kerf: the server is shutting down (kermit: sending big300: datachan: data connection lost: stream 0 (127.0.0.1:43001): EOF)",
			"the peer says: the server is shutting down (sending big300: data connection lost: stream 0 (127.0.0.1:43001): EOF)"},
		{"control: login refused: kerf: login failed", "login refused: login failed"},
		{"m3b: filestore: openat m3b: read-only file system", "m3b: openat m3b: read-only file system"},
		{"kermit: kermit: twice", "twice"},
		// A name that merely holds such a word is left alone.
		{"not-kermit: x", "not-kermit: x"},
		{"a kermit: b", "a kermit: b"},
		{"", ""},
	} {
		if got := plainWords(tc.in); got != tc.want {
			t.Errorf("plainWords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
