package filestore_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kerf/kermit"
)

// A wildcard in a directory that may be read but not searched (mode
// 0644) finds names whose entries cannot be looked at: a listing, a
// tree listing and a delete by the pattern fail with the permission's
// error, as they did when the matches were gathered first (review: the
// tree listing called each file a directory it could not list, and rm
// counted a directory among the matching files).
func TestWildcardInUnsearchableDirectory(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, "ns/a", "ns/b", "ns/sub/")
	d := openTree(t, root)
	ns := filepath.Join(root, "ns")
	os.Chmod(ns, 0o644)
	defer os.Chmod(ns, 0o755)
	unprivileged(t, func() {
		_, lerr := d.List("ns/*")
		var tree bytes.Buffer
		terr := d.ListTree("ns/*", kermit.TreeForm{Problems: true}, &tree)
		rerr := d.Remove("ns/*")
		for what, err := range map[string]error{"List": lerr, "ListTree": terr, "Remove": rerr} {
			if !errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "matching files") {
				t.Errorf("%s(ns/*): %v; want permission denied", what, err)
			}
		}
		if tree.Len() != 0 {
			t.Errorf("ListTree wrote %q before its error", tree.String())
		}
	})
	for _, n := range []string{"a", "b", "sub"} {
		if _, err := os.Lstat(filepath.Join(ns, n)); err != nil {
			t.Errorf("ns/%s: %v", n, err)
		}
	}
}
