package filestore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// readDir gives what os.ReadDir gives (names in order, types, and
// details that Lstat agrees with), names that are not UTF-8 included,
// from a directory opened in an os.Root, whose entries it lists without
// their details until asked (the lazy reader on Linux); a big directory
// takes more than one read.
func TestReadDirIsReadDir(t *testing.T) {
	dir := t.TempDir()
	names := []string{"b.txt", "a dir", "\xff\xfe latin1", "link", "fifo", ".hidden"}
	os.WriteFile(filepath.Join(dir, names[0]), []byte("hello"), 0o640)
	os.Mkdir(filepath.Join(dir, names[1]), 0o750)
	os.WriteFile(filepath.Join(dir, names[2]), []byte("x"), 0o600)
	os.Symlink("b.txt", filepath.Join(dir, names[3]))
	syscall.Mkfifo(filepath.Join(dir, names[4]), 0o644)
	os.WriteFile(filepath.Join(dir, names[5]), nil, 0o644)
	old := time.Date(2001, 2, 3, 4, 5, 6, 789, time.UTC)
	os.Chtimes(filepath.Join(dir, names[0]), old, old)
	os.Mkdir(filepath.Join(dir, "many"), 0o755)
	for i := range 3000 { // more than one getdents read
		os.WriteFile(filepath.Join(dir, "many", fmt.Sprintf("file-%04d-with-a-longer-name", i)), nil, 0o644)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	spills := t.TempDir()
	defer func(at int, dir string) { spillAt, SpillDir = at, dir }(spillAt, SpillDir)
	SpillDir = spills
	for _, c := range []struct {
		rel     string
		spillAt int
	}{{".", spillAt}, {"many", spillAt}, {"many", 16 << 10}, {"many", 1}} {
		spillAt = c.spillAt
		rel := c.rel
		list, err := readDir(root, rel, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadDir(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if list.Len() != len(want) {
			t.Fatalf("%s: %d entries, want %d", rel, list.Len(), len(want))
		}
		if spilled, runs := list.spill != nil, len(list.runs); spilled != (c.spillAt < 64<<10) || spilled && runs < 3 {
			t.Errorf("%s, spilling at %d bytes: spilled %v, %d runs", rel, c.spillAt, spilled, runs)
		}
		if left, _ := os.ReadDir(spills); len(left) != 0 {
			t.Errorf("%s: the runs' file has a name: %v", rel, left)
		}
		i := 0
		for e := range list.all() {
			w := want[i]
			i++
			if e.Name() != w.Name() || e.Type() != w.Type() || e.IsDir() != w.IsDir() {
				t.Errorf("%s: entry %d: %q %v, want %q %v", rel, i, e.Name(), e.Type(), w.Name(), w.Type())
				continue
			}
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			li, err := os.Lstat(filepath.Join(dir, rel, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Name() != li.Name() || fi.Size() != li.Size() || fi.Mode() != li.Mode() || !fi.ModTime().Equal(li.ModTime()) {
				t.Errorf("%s: %q: %v %d %v, want %v %d %v", rel, e.Name(), fi.Mode(), fi.Size(), fi.ModTime(), li.Mode(), li.Size(), li.ModTime())
			}
			if id, ok := identityOf(fi); !ok || !slices.Equal([]uint64{id.dev, id.ino}, []uint64{uint64(li.Sys().(*syscall.Stat_t).Dev), li.Sys().(*syscall.Stat_t).Ino}) {
				t.Errorf("%s: %q: identity %v, %v", rel, e.Name(), id, ok)
			}
		}
		if i != len(want) || list.readErr() != nil {
			t.Errorf("%s, spilling at %d bytes: %d entries came (%v), want %d", rel, c.spillAt, i, list.readErr(), len(want))
		}
		list.close()
	}
}

// A name longer than a slot says is refused, not cut (names on Linux are
// at most 255 bytes: a guard).
func TestDirListRefusesOverlongName(t *testing.T) {
	l := &dirList{dir: &openDir{rel: "d", closed: true}}
	if err := l.add([]byte("short"), 0); err != nil {
		t.Fatal(err)
	}
	if err := l.add(make([]byte, 1<<16), 0); err == nil {
		t.Error("a name of 64 KiB taken")
	}
	if got := slices.Collect(l.all()); l.Len() != 1 || len(got) != 1 || got[0].Name() != "short" {
		t.Errorf("%d entries: %v", l.Len(), got)
	}
}
