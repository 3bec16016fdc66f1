package kermit

import "testing"

// A server's root is cut out of what its errors tell the peer (QA ar:
// a read error named the served file by its whole path on the server).
func TestConcealedCutsTheRoot(t *testing.T) {
	for _, tc := range []struct{ root, msg, want string }{
		{"/srv/kerf/alice", "kermit: reading a/b: read /srv/kerf/alice/a/b: input/output error", "kermit: reading a/b: read a/b: input/output error"},
		{"/srv/kerf/alice/", "stat /srv/kerf/alice: permission denied", "stat .: permission denied"},
		{"/srv/kerf/alice", "read /srv/kerf/alicex/f: denied", "read /srv/kerf/alicex/f: denied"},
		{"/srv/kerf/alice", "/srv/kerf/alice/a and /srv/kerf/alice/b", "a and b"},
		{"", "read /srv/kerf/alice/a: denied", "read /srv/kerf/alice/a: denied"},
		{"/", "read /etc/x: denied", "read /etc/x: denied"},
	} {
		s := &Session{cfg: Config{Conceal: func() string { return tc.root }}}
		if got := string(s.concealed([]byte(tc.msg))); got != tc.want {
			t.Errorf("root %q: %q, want %q", tc.root, got, tc.want)
		}
	}
	if got := string((&Session{}).concealed([]byte("read /a/b"))); got != "read /a/b" {
		t.Errorf("without Conceal: %q", got)
	}
}
