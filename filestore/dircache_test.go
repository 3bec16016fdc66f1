package filestore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kerf/filestore"
)

// receive creates, writes and commits one file.
func receive(t *testing.T, d *filestore.Dir, name, data string) {
	t.Helper()
	in, err := d.Create(name)
	if err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
	if _, err := in.WriteAt([]byte(data), 0); err != nil {
		t.Fatal(err)
	}
	if err := in.Commit(time.Time{}, 0o644); err != nil {
		t.Fatalf("Commit(%q): %v", name, err)
	}
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("%s = %q, %v; want %q", path, got, err, want)
	}
}

// Directories are kept open between files; one removed (and made again
// by someone else, or not) in between must not lose the next file.
func TestCreateAfterDirectoryRemoved(t *testing.T) {
	root := t.TempDir()
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	receive(t, d, "a/b/1", "one")
	if err := os.RemoveAll(filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	receive(t, d, "a/b/2", "two")
	checkFile(t, filepath.Join(root, "a", "b", "2"), "two")

	// Replaced by a new directory of the same name.
	os.RemoveAll(filepath.Join(root, "a"))
	os.MkdirAll(filepath.Join(root, "a", "b"), 0o755)
	receive(t, d, "a/b/3", "three")
	checkFile(t, filepath.Join(root, "a", "b", "3"), "three")
}

// More directories than the handle cache holds, with files open in
// several of them at once, and a file still open when the Dir closes.
func TestManyDirectories(t *testing.T) {
	root := t.TempDir()
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	ins := map[string]interface {
		WriteAt([]byte, int64) (int, error)
		Commit(time.Time, os.FileMode) error
	}{}
	for i := range 200 {
		name := fmt.Sprintf("d%d/sub/f%d", i, i)
		if i%50 == 0 { // kept open across many evictions
			in, err := d.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			in.WriteAt([]byte(name), 0)
			ins[name] = in
			open = append(open, name)
			continue
		}
		receive(t, d, name, name)
	}
	for _, name := range open {
		if err := ins[name].Commit(time.Time{}, 0o644); err != nil {
			t.Fatalf("Commit(%q) after evictions: %v", name, err)
		}
	}
	for i := range 200 {
		name := fmt.Sprintf("d%d/sub/f%d", i, i)
		checkFile(t, filepath.Join(root, filepath.FromSlash(name)), name)
	}
	last, err := d.Create("d1/sub/late")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	last.Abort(false) // after Close: must not panic
}

// Mode and time are set on the committed file; the top directory works
// like any other.
func TestCommitModeAndTimeAtTop(t *testing.T) {
	root := t.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	in, err := d.Create("top.bin")
	if err != nil {
		t.Fatal(err)
	}
	in.WriteAt([]byte("x"), 0)
	mt := time.Date(2021, 5, 6, 7, 8, 9, 0, time.UTC)
	if err := in.Commit(mt, 0o640); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "top.bin"))
	if err != nil || fi.Mode().Perm() != 0o640 || !fi.ModTime().Equal(mt) {
		t.Fatalf("top.bin: %v %v %v", err, fi.Mode(), fi.ModTime())
	}
	// A directory where a file is to go is refused, and the next file in
	// the same directory still works.
	os.Mkdir(filepath.Join(root, "isdir"), 0o755)
	if _, err := d.Create("isdir"); err == nil {
		t.Error("Create over a directory succeeded")
	}
	receive(t, d, "next", "n")
	checkFile(t, filepath.Join(root, "next"), "n")
}

func BenchmarkCreateCommit(b *testing.B) {
	root := b.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	data := make([]byte, 16<<10)
	b.SetBytes(int64(len(data)))
	i := 0
	for b.Loop() {
		in, err := d.Create(fmt.Sprintf("tree/d%d/f%d", i%20, i))
		if err != nil {
			b.Fatal(err)
		}
		in.WriteAt(data, 0)
		if err := in.Commit(time.Now(), 0o644); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// In a batch, committed files keep their temporary names until EndBatch,
// which syncs and renames them all; mode and time are set already.
// Small batches are synced file by file, large ones with syncfs.
func TestBatchDefersRename(t *testing.T) {
	for _, names := range [][]string{
		{"a/1", "a/2", "b/c/3", "top"},
		{"a/1", "a/2", "a/3", "a/4", "a/5", "b/c/1", "b/c/2", "b/c/3", "top", "top2"},
	} {
		batchDefersRename(t, names)
	}
}

func batchDefersRename(t *testing.T, names []string) {
	root := t.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	d.BeginBatch()
	mt := time.Date(2022, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, n := range names {
		in, err := d.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		in.WriteAt([]byte("data of "+n), 0)
		if err := in.Commit(mt, 0o640); err != nil {
			t.Fatal(err)
		}
		in.Abort(true) // as after a failed Commit: must leave the batch alone
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(n))); !os.IsNotExist(err) {
			t.Fatalf("%s has its final name before EndBatch: %v", n, err)
		}
		dir, base := filepath.Split(filepath.Join(root, filepath.FromSlash(n)))
		if _, err := os.Stat(filepath.Join(dir, "."+base+filestore.PartSuffix)); err != nil {
			t.Fatalf("%s: temporary file missing before EndBatch: %v", n, err)
		}
	}
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := filepath.Join(root, filepath.FromSlash(n))
		checkFile(t, p, "data of "+n)
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o640 || !fi.ModTime().Equal(mt) {
			t.Errorf("%s: %v %v", n, fi.Mode(), fi.ModTime())
		}
		dir, base := filepath.Split(p)
		if _, err := os.Stat(filepath.Join(dir, "."+base+filestore.PartSuffix)); !os.IsNotExist(err) {
			t.Errorf("%s: temporary file left: %v", n, err)
		}
	}
	// After EndBatch, Commit is immediate again.
	receive(t, d, "after", "x")
	checkFile(t, filepath.Join(root, "after"), "x")
}

// The same name twice in one batch: the second file wins, and the first
// is not lost under a temporary name the second reuses.
func TestBatchSameNameTwice(t *testing.T) {
	root := t.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	d.BeginBatch()
	receive(t, d, "x/same", "first")
	receive(t, d, "x/same", "second, longer")
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(root, "x", "same"), "second, longer")
}

// A batch flushes on its own when it is large, and Close flushes the
// rest.
func TestBatchFlushesWhenLargeAndOnClose(t *testing.T) {
	root := t.TempDir()
	d, _ := filestore.Open(root)
	d.BeginBatch()
	const n = 300
	for i := range n {
		receive(t, d, fmt.Sprintf("many/f%d", i), fmt.Sprint(i))
	}
	// The full batch is flushed in the background, while files go on
	// arriving.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(filepath.Join(root, "many", "f0"))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("first file of a large batch not flushed: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		checkFile(t, filepath.Join(root, "many", fmt.Sprintf("f%d", i)), fmt.Sprint(i))
	}
}

// A name that comes again while its first file is in a batch being
// flushed in the background waits for that flush: the second file wins.
func TestBatchSameNameDuringBackgroundFlush(t *testing.T) {
	root := t.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	d.BeginBatch()
	receive(t, d, "x/same", "first")
	for i := range 300 { // past the batch limit: a flush starts
		receive(t, d, fmt.Sprintf("x/f%d", i), "y")
	}
	receive(t, d, "x/same", "second, longer")
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(root, "x", "same"), "second, longer")
	matches, _ := filepath.Glob(filepath.Join(root, "x", ".*"+filestore.PartSuffix))
	if len(matches) != 0 {
		t.Fatalf("temporary files left: %v", matches)
	}
}

// A file whose flush fails in the background does not make a later
// file's Commit fail: EndBatch reports it, by name, and the other files
// of the batch are completed.
func TestBatchBackgroundFlushErrorGoesToEndBatch(t *testing.T) {
	root := t.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	d.BeginBatch()
	in, err := d.Create("x/bad")
	if err != nil {
		t.Fatal(err)
	}
	in.WriteAt([]byte("data"), 0)
	// A directory takes the final name: the flush's rename will fail.
	if err := os.MkdirAll(filepath.Join(root, "x", "bad", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := in.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 600 { // two background flushes: the first has the bad file
		receive(t, d, fmt.Sprintf("x/f%d", i), "y")
	}
	err = d.EndBatch()
	if err == nil || !strings.Contains(err.Error(), "x/bad") {
		t.Fatalf("EndBatch: %v, want the failure of x/bad", err)
	}
	for i := range 600 {
		checkFile(t, filepath.Join(root, "x", fmt.Sprintf("f%d", i)), "y")
	}
}

// A directory that takes a file's final name while the file is received
// fails the file, and takes its temporary copy with it: no later try
// could rename it there, and a verified copy under kerf's temporary name
// would be left for nothing (the sender still has the file). Both with
// the rename at Commit and deferred to a batch's flush.
func TestFinalNameTakenByDirectoryLeavesNoPartial(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			root := t.TempDir()
			d, _ := filestore.Open(root)
			defer d.Close()
			if batch {
				d.BeginBatch()
			}
			in, err := d.Create("x")
			if err != nil {
				t.Fatal(err)
			}
			in.WriteAt([]byte("data"), 0)
			if err := os.MkdirAll(filepath.Join(root, "x", "y"), 0o755); err != nil {
				t.Fatal(err)
			}
			err = in.Commit(time.Time{}, 0o644)
			if batch {
				if err != nil {
					t.Fatal(err)
				}
				err = d.EndBatch()
			} else {
				in.Abort(true) // as the engine does after a failed Commit
			}
			if !errors.Is(err, syscall.EISDIR) {
				t.Fatalf("got %v, want the rename's EISDIR", err)
			}
			if _, err := os.Lstat(filepath.Join(root, ".x"+filestore.PartSuffix)); !os.IsNotExist(err) {
				t.Fatalf("temporary file left behind: %v", err)
			}
			if fi, err := os.Stat(filepath.Join(root, "x", "y")); err != nil || !fi.IsDir() {
				t.Fatalf("the directory in the way was touched: %v", err)
			}
		})
	}
}

func BenchmarkCreateCommitBatch(b *testing.B) {
	root := b.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	data := make([]byte, 16<<10)
	b.SetBytes(int64(len(data)))
	i := 0
	d.BeginBatch()
	for b.Loop() {
		in, err := d.Create(fmt.Sprintf("tree/d%d/f%d", i%20, i))
		if err != nil {
			b.Fatal(err)
		}
		in.WriteAt(data, 0)
		if err := in.Commit(time.Now(), 0o644); err != nil {
			b.Fatal(err)
		}
		i++
		if i%2000 == 0 {
			if err := d.EndBatch(); err != nil {
				b.Fatal(err)
			}
			d.BeginBatch()
		}
	}
	if err := d.EndBatch(); err != nil {
		b.Fatal(err)
	}
}

// A file of a batch not yet renamed, named as a later file's directory
// ("a", then "a/x": a hostile server's get -r), is given its name
// first, and the later file is refused at its Create: the batch ends
// well, "a" whole (QA: the directory made for "a/x" stood where "a" was
// to be renamed, and the group failed at its end).
func TestBatchFileNamedAsALaterDirectory(t *testing.T) {
	for _, unnamed := range []int64{0, filestore.NetUnnamedMax} {
		root := t.TempDir()
		d, _ := filestore.Open(root)
		d.UnnamedMax = unnamed
		d.BeginBatch()
		in, err := d.Create("a")
		if err != nil {
			t.Fatal(err)
		}
		in.WriteAt([]byte("data of a"), 0)
		if err := in.Commit(time.Now(), 0o644); err != nil {
			t.Fatal(err)
		}
		if in, err := d.Create("a/x"); err == nil || !strings.Contains(err.Error(), "not a directory") {
			if in != nil {
				in.Abort(false)
			}
			t.Errorf("UnnamedMax %d: Create of a/x under the file a: %v, want refused", unnamed, err)
		}
		if err := d.EndBatch(); err != nil {
			t.Errorf("UnnamedMax %d: EndBatch: %v", unnamed, err)
		}
		checkFile(t, filepath.Join(root, "a"), "data of a")
		d.Close()
	}
}
