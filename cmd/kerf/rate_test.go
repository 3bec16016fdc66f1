package main

import (
	"fmt"
	"testing"

	"kerf/auth"
)

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64 // -1: refused
	}{
		{"0", 0}, {"0k", 0}, {"0.0M", 0}, // no limit
		{"1024", 1024}, {"500k", 500 << 10}, {"500K", 500 << 10}, {"20M", 20 << 20}, {"20MB", 20 << 20},
		{"20MiB", 20 << 20}, {"20mib/s", 20 << 20}, {"20Mi", 20 << 20}, {"1t", 1 << 40}, {"1.5g", 3 << 29}, {" 2G ", 2 << 30}, {"1k", 1024},
		{"", -1}, {"k", -1}, {"fast", -1}, {"100", -1}, {"-5M", -1}, {"1e400", -1}, {"NaN", -1}, {"20Mbit", -1}, {"1kg", -1}, {"-0.5k", -1},
	} {
		got, err := parseRate(c.in)
		if c.want < 0 {
			if err == nil {
				t.Errorf("parseRate(%q) = %d, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseRate(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

// The serve banner names users whose own root is where their files go
// (QA: --root named another directory, and nothing said so).
func TestOwnRoots(t *testing.T) {
	users := []auth.User{{Name: "a"}, {Name: "b", Root: "/srv/x/"}, {Name: "c", Root: "/srv/b"}}
	if got := ownRoots(users, "/srv/x"); len(got) != 1 || got[0] != "c (/srv/b)" {
		t.Errorf("ownRoots = %q; want c only", got)
	}
	for i := range 7 {
		users = append(users, auth.User{Name: fmt.Sprint("u", i), Root: "/other"})
	}
	if got := ownRoots(users, "/srv/x"); len(got) != 6 || got[5] != "and 3 more (kerf user list)" {
		t.Errorf("ownRoots of 8 = %q; want 5 and a count", got)
	}
}
