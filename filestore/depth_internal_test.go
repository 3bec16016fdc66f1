package filestore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A name deeper than MaxDepth is refused before anything is made (QA:
// one 4,000 levels deep cost a server 22 s of CPU, quadratic in the
// depth); one at the limit is taken.
func TestNamesDeeperThanMaxDepthRefused(t *testing.T) {
	root := t.TempDir()
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	deep := strings.Repeat("d/", MaxDepth) + "x" // MaxDepth+1 levels
	if _, err := d.Create(deep); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("Create of a name %d levels deep: %v, want ErrTooDeep", MaxDepth+1, err)
	}
	if _, err := os.Stat(filepath.Join(root, "d")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("something was made for the refused name: %v", err)
	}
	if err := d.Mkdir(strings.TrimSuffix(deep, "/x")); err != nil {
		t.Errorf("Mkdir of a directory %d levels deep: %v", MaxDepth, err)
	}
	if err := d.Mkdir(deep); !errors.Is(err, ErrTooDeep) {
		t.Errorf("Mkdir of one %d levels deep: %v, want ErrTooDeep", MaxDepth+1, err)
	}
	// The depth is the tree's: a name under a deep current directory
	// counts the levels above it (review: 200 under 200 were stored).
	half := strings.Repeat("d/", MaxDepth/2)
	if err := d.Chdir(half); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(half + "x"); !errors.Is(err, ErrTooDeep) {
		t.Errorf("Create of a name %d levels under a directory %d deep: %v, want ErrTooDeep", MaxDepth/2+1, MaxDepth/2, err)
	}
}

// A walk of a tree made deeper than MaxDepth by other means reports
// the directory at the limit as too deep and goes no further.
func TestWalkStopsAtMaxDepth(t *testing.T) {
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, strings.Repeat("d/", MaxDepth+5)), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(top)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	deepest, tooDeep := 0, 0
	walkDir(root, "d", func(p string, e fs.DirEntry, err error) error {
		deepest = max(deepest, strings.Count(p, "/")+1)
		if errors.Is(err, ErrTooDeep) {
			tooDeep++
		}
		return nil
	})
	if deepest != MaxDepth || tooDeep != 1 {
		t.Errorf("walked %d levels deep, %d too deep; want %d, and 1", deepest, tooDeep, MaxDepth)
	}
}
