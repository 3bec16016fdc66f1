package filestore

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A list gives its names back sorted, in memory or merged from runs on
// disk, many or one name a run: by the whole name, or by a key with the
// order they came in kept among equal keys (several names' finds listed
// by their last element), also across runs. Where no file can be had for
// the runs, the names stay in memory and still come back sorted.
func TestNameListSortsAcrossRuns(t *testing.T) {
	defer func(at int, dir string) { spillAt, SpillDir = at, dir }(spillAt, SpillDir)
	rng := rand.New(rand.NewPCG(1, 2))
	var unique, tied [][]byte
	for i := range 5000 {
		unique = append(unique, fmt.Appendf(nil, "%x-%d", rng.Uint64(), i))
		// Few distinct last elements: many ties, told apart by the
		// directory, which must keep the order added.
		tied = append(tied, fmt.Appendf(nil, "dir%04d/%s", i, []string{"a", "b", "c", "d"}[rng.IntN(4)]))
	}
	unique = append(unique, []byte("\xff\xfe not UTF-8"), []byte("z"), []byte(""))
	cases := []struct {
		name     string
		names    [][]byte
		key      func([]byte) []byte
		spillAt  int
		spillDir string
		runs     bool
	}{
		{"in memory", unique, nil, 8 << 20, "", false},
		{"runs", unique, nil, 16 << 10, t.TempDir(), true},
		{"a run a name", unique[:300], nil, 1, t.TempDir(), true},
		{"no room for runs", unique, nil, 16 << 10, filepath.Join(t.TempDir(), "missing"), false},
		{"ties in memory", tied, baseName, 8 << 20, "", false},
		{"ties across runs", tied, baseName, 16 << 10, t.TempDir(), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spillAt, SpillDir = c.spillAt, c.spillDir
			l := &nameList{key: c.key, rel: "d"}
			defer l.close()
			for i, n := range c.names {
				if err := l.add(n, fs.FileMode(i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.finish(); err != nil {
				t.Fatal(err)
			}
			if got := len(l.runs) > 1; got != c.runs {
				t.Errorf("%d runs; want runs: %v", len(l.runs), c.runs)
			}
			type named struct {
				name []byte
				typ  fs.FileMode
			}
			var want []named
			for i, n := range c.names {
				want = append(want, named{n, fs.FileMode(i)})
			}
			key := c.key
			if key == nil {
				key = func(b []byte) []byte { return b }
			}
			slices.SortStableFunc(want, func(a, b named) int { return bytes.Compare(key(a.name), key(b.name)) })
			for pass := range 2 { // (all may be asked for again)
				i := 0
				for name, typ := range l.all() {
					if i < len(want) && (!bytes.Equal(name, want[i].name) || typ != want[i].typ) {
						t.Fatalf("pass %d, name %d: %q %d, want %q %d", pass, i, name, typ, want[i].name, want[i].typ)
					}
					i++
				}
				if i != len(want) || l.readErr() != nil || l.Len() != len(want) {
					t.Fatalf("pass %d: %d names came (%v), Len %d; want %d", pass, i, l.readErr(), l.Len(), len(want))
				}
			}
			if c.spillDir != "" {
				if left, _ := os.ReadDir(c.spillDir); len(left) != 0 {
					t.Errorf("the runs' file has a name: %v", left)
				}
			}
		})
	}
}

// A run whose write fails (the disk full, say) leaves no trace in the
// runs: a later run written once there is room again begins where the
// failed one did, and every name comes back, none empty (review 50: the
// later run took the failed one's half-written bytes for its own, read
// back as empty names, which a walk took for the directory itself).
func TestNameListRunAfterAFailedOne(t *testing.T) {
	defer func(at int, dir string) { spillAt, SpillDir = at, dir }(spillAt, SpillDir)
	spillAt, SpillDir = 4<<10, t.TempDir()
	l := &nameList{rel: "d"}
	defer l.close()
	i := 0
	for len(l.runs) < 1 {
		if err := l.add(fmt.Appendf(nil, "name-%06d", i), 0); err != nil {
			t.Fatal(err)
		}
		i++
	}
	good := l.spill
	ro, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", good.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	l.spill = ro // the next run's write fails
	var addErr error
	for addErr == nil {
		addErr = l.add(fmt.Appendf(nil, "name-%06d", i), 0)
		i++
	}
	l.spill = good // room again
	ro.Close()
	if err := l.finish(); err != nil {
		t.Fatalf("finish: %v", err)
	}
	n, empty := 0, 0
	for name := range l.all() {
		n++
		if len(name) == 0 {
			empty++
		}
	}
	if n != i || empty > 0 || l.readErr() != nil {
		t.Errorf("%d names came back of %d, %d empty (%v); want all, none empty", n, i, empty, l.readErr())
	}
}
