package main

import (
	"strings"
	"testing"
)

func TestParseTarget(t *testing.T) {
	for _, c := range []struct{ in, addr, path, err string }{
		{"host/a/b", "host:1649", "a/b", ""},
		{"host:2000/a", "host:2000", "a", ""},
		{"host", "host:1649", "", ""},
		{"host//abs", "host:1649", "/abs", ""},
		{"[::1]:2000/x", "[::1]:2000", "x", ""},
		{"::1/x", "[::1]:1649", "x", ""},
		{"::1:18600/x", "", "", "brackets"},
		{"host:backup", "", "", "HOST/PATH"},
		{"host:0/x", "", "", "1-65535"},
		{"/x", "", "", "no host"},
		// A user goes before the host, as ssh's; the last '@' before
		// the path ends it, and one in the path is the path's.
		{"alice@host/a", "alice@host:1649", "a", ""},
		{"a@example.com@[::1]:2000/x", "a@example.com@[::1]:2000", "x", ""},
		{"host/dir/a@b", "host:1649", "dir/a@b", ""},
		{"@host/x", "", "", "no user"},
		{"alice@/x", "", "", "no host"},
	} {
		addr, p, err := parseTarget(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: err %v, want one saying %q", c.in, err, c.err)
		case c.err == "" && (err != nil || addr != c.addr || p != c.path):
			t.Errorf("%q: %q %q %v, want %q %q", c.in, addr, p, err, c.addr, c.path)
		}
	}
}

func TestLooksLikeHost(t *testing.T) {
	for _, c := range []struct {
		first string
		want  bool
	}{{"h:2000", true}, {"10.0.0.1", true}, {"other:99", true}, {"sub", false}, {"a:b", false}, {"bob@10.0.0.1", true}, {"x@sub", false}} {
		for _, addr := range []string{"10.0.0.1:1649", "alice@10.0.0.1:1649"} {
			if got := looksLikeHost(c.first, addr); got != c.want {
				t.Errorf("looksLikeHost(%q, %q) = %v", c.first, addr, got)
			}
		}
	}
}
