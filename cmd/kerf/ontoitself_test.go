package main

import (
	"slices"
	"testing"
)

// Each local path a send names pairs with the server's current
// directory at the directory its top name lies in; a get's names pair
// the local directory with theirs.
func TestProbePairs(t *testing.T) {
	send := []struct {
		args      []string
		recursive bool
		want      []string // local directories
	}{
		{[]string{"a.bin"}, false, []string{"."}},
		{[]string{"mnt/a.bin", "/abs/dir/b"}, false, []string{"mnt", "/abs/dir"}},
		{[]string{"tree", "tree/", "mnt/tree//"}, true, []string{".", ".", "mnt"}},
		{[]string{".", "mnt/.", "mnt/.."}, true, []string{".", "mnt/.", "mnt/.."}},
	}
	for _, tc := range send {
		var got []string
		for _, p := range sendProbePairs(tc.args, tc.recursive) {
			if p.remote != "." {
				t.Errorf("send %q: remote %q, want the current directory", tc.args, p.remote)
			}
			got = append(got, p.local)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("send %q (recursive %v): local %q, want %q", tc.args, tc.recursive, got, tc.want)
		}
	}
	get := []struct {
		specs []string
		want  []string // remote directories
	}{
		{[]string{"a.bin"}, []string{"."}},
		{[]string{"/out/a.bin", "out/sub/", "*/x.bin"}, []string{"/out", "out", "*"}},
		{[]string{".", "out/."}, []string{".", "out/."}},
	}
	for _, tc := range get {
		var got []string
		for _, p := range getProbePairs(tc.specs, "dest") {
			if p.local != "dest" {
				t.Errorf("get %q: local %q, want dest", tc.specs, p.local)
			}
			got = append(got, p.remote)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("get %q: remote %q, want %q", tc.specs, got, tc.want)
		}
	}
}
