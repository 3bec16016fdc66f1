package filestore_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"kerf/filestore"
)

// A directory that can be read but not searched lists its names, whose
// details cannot be had: List says so, not that it is empty (review: the
// lazy reader's Info errors were passed over as entries gone).
func TestListOfUnsearchableDirSaysWhy(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "noexec")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	os.Chmod(dir, 0o444)
	defer os.Chmod(dir, 0o755)
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	unprivileged(t, func() {
		if l, err := d.List("noexec"); err == nil {
			t.Errorf("List(noexec) = %q, nil; want the permission error", l)
		}
	})
}

// A walk keeps at most a few directories open however deep the tree
// (review: one descriptor a level made a deep tree fail under a low
// limit), and still gives each file with its details.
func TestDeepTreeWalkUnderDescriptorLimit(t *testing.T) {
	root := t.TempDir()
	const depth = 120
	p := filepath.Join(root, "top")
	for range depth {
		p = filepath.Join(p, "d")
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(p, "leaf.txt"), []byte("x"), 0o644)
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var old syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old)
	lim := old
	lim.Cur = 100
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	files, err := d.Match("top", true)
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	if err != nil {
		t.Fatal(err)
	}
	leaf := false
	for _, f := range files {
		if f.Dir {
			if f.ModTime.IsZero() || !f.ModeKnown {
				t.Errorf("%s: no details", f.Name)
			}
			continue
		}
		r, err := f.Open()
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		r.Close()
		leaf = leaf || strings.HasSuffix(f.Name, "/leaf.txt") && f.Size == 1
	}
	if !leaf {
		t.Errorf("leaf.txt not found whole in a %d-deep tree under a limit of %d descriptors (%d entries)", depth, lim.Cur, len(files))
	}
}
