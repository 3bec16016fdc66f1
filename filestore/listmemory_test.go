package filestore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"kerf/filestore"
	"kerf/kermit"
)

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// midway calls at once when it has been called n times.
type midway struct {
	calls, n int
	at       func()
}

func (m *midway) tick() {
	if m.calls++; m.calls == m.n {
		m.at()
	}
}

// A listing, a wildcard's GET and a wildcard's REMOTE DELETE of a big
// directory hold its names and little else: the heap they keep, taken
// half-way through, is a small part of what each entry's FileInfo would
// be (QA w: 500,000 entries took the server 346 MB to list, 434 MB to
// match entry*, 329 MB to delete them). The names here are 60 bytes;
// held as fs.DirEntry values with their details, an entry is 500 bytes
// and more.
func TestBigDirectoryHeldAsNames(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 40,000 files")
	}
	root := t.TempDir()
	const n = 40000
	dir := filepath.Join(root, "big")
	os.Mkdir(dir, 0o755)
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("entry-with-a-name-of-some-length-to-be-held-%016d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	d := openTree(t, root)
	const most = 250 // bytes an entry, at most, held half-way
	checkHeld := func(what string, run func(m *midway) error, want int, ok func(held uint64) bool) {
		t.Helper()
		before := liveHeap()
		var held uint64
		m := &midway{n: n / 2, at: func() {
			if h := liveHeap(); h > before {
				held = h - before
			}
		}}
		if err := run(m); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if m.calls != want {
			t.Errorf("%s: %d entries, want %d", what, m.calls, want)
		}
		if !ok(held) {
			t.Errorf("%s held %d bytes an entry half-way (%d in all)", what, held/n, held)
		}
		t.Logf("%s: %d bytes an entry half-way (%d in all)", what, held/n, held)
	}
	check := func(what string, run func(m *midway) error, want int) {
		t.Helper()
		checkHeld(what, run, want, func(held uint64) bool { return held/n <= most })
	}
	// A listing is written as it is made, in many writes, not made
	// whole and then written.
	listing := func(spec string, form kermit.ListForm) func(m *midway) error {
		return func(m *midway) error {
			l := &lineCounter{m: m}
			err := d.ListTo(spec, form, l)
			if l.writes < n/1000 {
				t.Errorf("ls %s: %d lines in %d writes; want it written as it is made", spec, n, l.writes)
			}
			return err
		}
	}
	check("ls big", listing("big", kermit.ListForm{}), n)
	check("ls big/entry*", listing("big/entry*", kermit.ListForm{Exact: true}), n)
	check("get big/entry*", func(m *midway) error {
		_, err := d.MatchWalk("big/entry*", false, nil, func(kermit.OutgoingFile) bool { m.tick(); return true })
		return err
	}, n)
	// Past what a list holds (256 KiB here, 8 MiB in use), the names wait
	// in sorted runs on disk: what is held is bounded, whatever the
	// number of entries (here the 40,000 would be 3 MB and more).
	restore := filestore.SetSpillAt(256 << 10)
	const mostInAll = 1 << 20
	inAll := func(held uint64) bool { return held <= mostInAll }
	checkHeld("ls big, spilling", listing("big", kermit.ListForm{}), n, inAll)
	checkHeld("ls big/entry*, spilling", listing("big/entry*", kermit.ListForm{Exact: true}), n, inAll)
	checkHeld("ls big/entry* big/x*, spilling", listing("big/entry* big/x*", kermit.ListForm{Exact: true}), n, inAll)
	checkHeld("get big/entry*, spilling", func(m *midway) error {
		_, err := d.MatchWalk("big/entry*", false, nil, func(kermit.OutgoingFile) bool { m.tick(); return true })
		return err
	}, n, inAll)
	checkHeld("get -r big, spilling", func(m *midway) error {
		_, err := d.MatchWalk("big", true, nil, func(kermit.OutgoingFile) bool { m.tick(); return true })
		return err
	}, n+1, inAll) // (and big's own record)
	restore()
	removed := 0
	check("rm big/entry*", func(m *midway) error {
		return d.RemoveEach("big/entry*", false, func(string) { removed++; m.tick() })
	}, n)
	if left, _ := os.ReadDir(dir); len(left) != 0 || removed != n {
		t.Errorf("rm big/entry*: %d removed, %d left", removed, len(left))
	}
}

// lineCounter ticks for each line written to it.
type lineCounter struct {
	m      *midway
	writes int
}

func (l *lineCounter) Write(p []byte) (int, error) {
	l.writes++
	for _, c := range p {
		if c == '\n' {
			l.m.tick()
		}
	}
	return len(p), nil
}
