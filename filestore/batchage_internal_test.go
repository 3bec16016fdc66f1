package filestore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A batch whose first file has waited maxBatchAge is flushed at the next
// commit, and a batch before a big file as that file begins: on a slow
// link files came seconds apart, and a kill -9 of the receiver lost up
// to 256 verified files a session that were only waiting for their
// names (QA q).
func TestBatchFlushedByAgeAndBeforeABigFile(t *testing.T) {
	root := t.TempDir()
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.BeginBatch()
	commit := func(name string) {
		t.Helper()
		in, err := d.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.(*incoming).WillHold(1, false); err != nil {
			t.Fatal(err)
		}
		in.WriteAt([]byte("x"), 0)
		if err := in.Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	named := func(names ...string) bool {
		t.Helper()
		d.keepFlushErr(d.waitFlush())
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(root, n)); err != nil {
				return false
			}
		}
		return true
	}
	commit("a")
	commit("b")
	if named("a") {
		t.Fatal("a named at once: the batch does not batch, and this test tests nothing")
	}
	// c begins, and takes a second: at its commit the batch is flushed,
	// c with it.
	c, err := d.Create("c")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.(*incoming).WillHold(1, false); err != nil {
		t.Fatal(err)
	}
	c.WriteAt([]byte("x"), 0)
	d.pendingSince = d.pendingSince.Add(-maxBatchAge) // as if a second had passed
	if err := c.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	if !named("a", "b", "c") {
		t.Error("a batch a second old not flushed at the next commit")
	}
	// A file that begins when the batch is a second old: flushed first.
	commit("c2")
	d.pendingSince = d.pendingSince.Add(-maxBatchAge)
	commit("c3")
	if !named("c2") {
		t.Error("a batch a second old not flushed as the next file began")
	}

	commit("d")
	big, err := d.Create("big")
	if err != nil {
		t.Fatal(err)
	}
	if err := big.(*incoming).WillHold(bigForBatch+1, false); err != nil {
		t.Fatal(err)
	}
	if !named("d") {
		t.Error("the batch not flushed as a big file began")
	}
	big.Abort(false)

	// At the pace the batch's files came (2 bytes in half a second), a
	// file of 1 byte is a quarter of a second: the batch waits; one of
	// 4 bytes, a second: flushed before it (a serial line, where 8 MiB
	// is minutes).
	commit("p1")
	commit("p2")
	d.pendingSince = time.Now().Add(-maxBatchAge / 2)
	next := func(size int64) {
		t.Helper()
		in, err := d.Create(fmt.Sprintf("q%d", size))
		if err != nil {
			t.Fatal(err)
		}
		if err := in.(*incoming).WillHold(size, false); err != nil {
			t.Fatal(err)
		}
		in.Abort(false)
	}
	next(1)
	if named("p1") {
		t.Error("the batch flushed before a file a quarter of a second long at its pace")
	}
	next(4)
	if !named("p1", "p2") {
		t.Error("the batch not flushed before a file a second long at its pace")
	}
	for i := range 3 {
		commit(fmt.Sprintf("e%d", i))
	}
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	if !named("e0", "e1", "e2") {
		t.Error("the batch's end did not name its files")
	}
}
