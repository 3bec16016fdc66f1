package filestore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// openSparse opens a new Dir with Sparse set, closed when the test ends.
func openSparse(t *testing.T) (string, *filestore.Dir) {
	t.Helper()
	dir := t.TempDir()
	d := openTree(t, dir)
	d.Sparse = true
	return dir, d
}

// newSparseFile begins receiving name afresh in a new Dir with Sparse
// set, and returns the Dir's directory.
func newSparseFile(t *testing.T, name string) (string, kermit.Incoming) {
	t.Helper()
	dir, d := openSparse(t)
	in, err := d.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Truncate(0); err != nil {
		t.Fatal(err)
	}
	return dir, in
}

// commitReadBack commits in, received as name in dir, checks that it
// reads back as want, and returns its path.
func commitReadBack(t *testing.T, in kermit.Incoming, dir, name string, want []byte) string {
	t.Helper()
	if err := in.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, %v; want the %d written", len(got), err, len(want))
	}
	return p
}

// allocated is the space a file takes on disk.
func allocated(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// With Sparse, writes of zeros become holes, a file that ends in zeros
// still gets its whole length, and the content reads back the same;
// without it every byte is written.
func TestSparseReceive(t *testing.T) {
	const mib = 1 << 20
	data := bytes.Repeat([]byte("kerf"), 1024) // 4 KiB of data
	zero := make([]byte, mib)
	var want []byte
	for _, sparse := range []bool{true, false} {
		dir := t.TempDir()
		d, err := filestore.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		d.Sparse = sparse
		in, err := d.Create("disk.img")
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Truncate(0); err != nil {
			t.Fatal(err)
		}
		// data, 1 MiB of zeros, data, then 2 MiB of zeros, in blocks
		// written out of order as several data connections do.
		writes := []struct {
			off int64
			b   []byte
		}{{0, data}, {4096 + mib, data}, {4096, zero}, {8192 + 2*mib, zero}, {8192 + mib, zero}}
		want = make([]byte, 8192+3*mib)
		for _, w := range writes {
			if n, err := in.WriteAt(w.b, w.off); err != nil || n != len(w.b) {
				t.Fatalf("WriteAt(%d bytes at %d) = %d, %v", len(w.b), w.off, n, err)
			}
			copy(want[w.off:], w.b)
		}
		if err := in.Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
		d.Close()
		p := filepath.Join(dir, "disk.img")
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("sparse=%v: %d bytes read back, differ from the %d written", sparse, len(got), len(want))
		}
		a := allocated(t, p)
		if sparse && a > 256<<10 {
			t.Errorf("sparse: %d bytes allocated for 8 KiB of data", a)
		}
		if !sparse && a < 3*mib {
			t.Errorf("not sparse: only %d bytes allocated for %d written; the test cannot tell", a, len(want))
		}
	}
}

// A leftover partial holds old data until it is truncated: zeros written
// over it before then are written, not skipped.
func TestSparseLeftoverNotSkipped(t *testing.T) {
	dir, d := openSparse(t)
	in, _ := d.Create("p.bin")
	in.WriteAt(bytes.Repeat([]byte{0xff}, 8192), 0)
	in.Abort(true)

	in, err := d.Create("p.bin") // the leftover, resumed at 0 without a cut
	if err != nil {
		t.Fatal(err)
	}
	in.WriteAt(make([]byte, 8192), 0)
	if err := in.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "p.bin"))
	if !bytes.Equal(got, make([]byte, 8192)) {
		t.Fatalf("read back %d bytes, not the 8192 zeros written over the leftover", len(got))
	}
}

// A resumed partial (cut to its gap-free prefix by Partial) gets holes
// again past that prefix.
func TestSparseAfterResume(t *testing.T) {
	dir, d := openSparse(t)
	data := bytes.Repeat([]byte{0xaa}, 4096)
	in, _ := d.Create("r.img")
	in.Truncate(0)
	in.WriteAt(data, 0)
	in.Abort(true)

	in, err := d.Create("r.img")
	if err != nil {
		t.Fatal(err)
	}
	size, _, err := in.Partial()
	if err != nil || size != 4096 {
		t.Fatalf("Partial: %d, %v; want the 4096 bytes kept", size, err)
	}
	in.WriteAt(make([]byte, 2<<20), 4096)
	in.WriteAt(data, 4096+2<<20)
	if err := in.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "r.img")
	if fi, err := os.Stat(p); err != nil {
		t.Fatal(err)
	} else if fi.Size() != 8192+2<<20 {
		t.Fatalf("size %d", fi.Size())
	}
	if a := allocated(t, p); a > 256<<10 {
		t.Fatalf("%d bytes allocated after the resume: the zeros were written", a)
	}
}

// A sparse receive leaves a hole for each page of zeros, not only for a
// block of them: 1 MiB blocks holding a few bytes, or data in every
// other page, take the pages with data, and an unaligned block's edges
// are written whole. (QA: 11 bytes in a 3 GiB image took 3 MiB.)
func TestSparseReceiveByPage(t *testing.T) {
	const mib, page = 1 << 20, 4096
	dir, in := newSparseFile(t, "img")
	want := make([]byte, 16*mib+100)
	few := make([]byte, mib) // 11 bytes in a block of zeros
	copy(few[mib/2+3:], "eleven byte")
	every := make([]byte, mib) // data in every other page
	for p := 0; p < mib; p += 2 * page {
		every[p+7] = 0x5a
	}
	tail := make([]byte, mib+100) // unaligned, data in its last bytes
	copy(tail[mib+90:], "0123456789")
	for _, w := range []struct {
		off int64
		b   []byte
	}{{3 * mib, few}, {0, every}, {8 * mib, few}, {15*mib - 0, tail}, {mib, make([]byte, mib)}} {
		if n, err := in.WriteAt(w.b, w.off); err != nil || n != len(w.b) {
			t.Fatalf("WriteAt(%d bytes at %d) = %d, %v", len(w.b), w.off, n, err)
		}
		copy(want[w.off:], w.b)
	}
	p := commitReadBack(t, in, dir, "img", want)
	// 128 pages of every, one page each for few (twice) and tail's end.
	if a, most := allocated(t, p), int64(128+3)*page+64<<10; a > most {
		t.Errorf("%d bytes allocated; want at most %d", a, most)
	}
}

// Written in packets of a few hundred bytes to a few KB, as classic
// Kermit's are, in order, the pages of zeros still become holes: the
// tail of each write past a page boundary waits for the next (QA p: a
// 131 KB image of 100 bytes of data was stored whole). What comes out
// of order, or last, is written as it is.
func TestSparseReceiveInPackets(t *testing.T) {
	const page = 4096
	dir, in := newSparseFile(t, "img")
	want := make([]byte, 64<<10+100+64<<10+77)
	copy(want[64<<10:], bytes.Repeat([]byte{0xa5}, 100))
	copy(want[len(want)-77:], "the end, unaligned")
	for off, i := 0, 0; off < len(want); i++ {
		n := min(len(want)-off, []int{1103, 340, 94, 9024, 4096}[i%5])
		if got, err := in.WriteAt(want[off:off+n], int64(off)); err != nil || got != n {
			t.Fatalf("WriteAt(%d bytes at %d) = %d, %v", n, off, got, err)
		}
		off += n
	}
	p := commitReadBack(t, in, dir, "img", want)
	// One page for the 100 bytes, one or two for the tail.
	if a := allocated(t, p); a > 3*page {
		t.Errorf("%d bytes allocated for a file of %d bytes with 2 pages of data; want at most %d", a, len(want), 3*page)
	}
}

// A cut of a sparse file keeps what was received below the cut, the
// bytes still held back from the last write included, and nothing past
// it.
func TestSparseCutKeepsTheHeldBytesBelowIt(t *testing.T) {
	dir, in := newSparseFile(t, "img")
	data := bytes.Repeat([]byte("0123456789"), 100)
	if _, err := in.WriteAt(data, 0); err != nil { // all of it under a page: held back
		t.Fatal(err)
	}
	if err := in.Truncate(600); err != nil {
		t.Fatal(err)
	}
	commitReadBack(t, in, dir, "img", data[:600])
}

// A block of zeros (datachan.ZeroSkipper) is taken as a hole without
// being given, where a sparse receive knows the file holds nothing: the
// file reads back as if they were written, a part-page held back before
// them included, and ends at its whole length. Otherwise the zeros are
// to be written (false).
func TestSkipZerosAt(t *testing.T) {
	const mib = 1 << 20
	type skipper interface {
		SkipZerosAt(off, n int64) (bool, error)
	}
	odd := bytes.Repeat([]byte("kerf!"), 1000) // 5,000 bytes: a part-page held back
	dir, in := newSparseFile(t, "disk.img")
	z, ok := in.(skipper)
	if !ok {
		t.Fatalf("%T takes no blocks of zeros", in)
	}
	want := make([]byte, 3*mib+len(odd))
	if _, err := in.WriteAt(odd, 0); err != nil {
		t.Fatal(err)
	}
	copy(want, odd)
	for _, r := range [][2]int64{{int64(len(odd)), mib}, {int64(len(odd)) + 2*mib, mib}} {
		if done, err := z.SkipZerosAt(r[0], r[1]); !done || err != nil {
			t.Fatalf("SkipZerosAt(%d, %d) = %v, %v; want it taken", r[0], r[1], done, err)
		}
	}
	mid := int64(len(odd)) + mib
	if _, err := in.WriteAt(odd, mid); err != nil {
		t.Fatal(err)
	}
	copy(want[mid:], odd)
	// The rest of [mid, mid+mib) beyond odd: zeros again.
	if done, err := z.SkipZerosAt(mid+int64(len(odd)), mib-int64(len(odd))); !done || err != nil {
		t.Fatalf("SkipZerosAt after data = %v, %v", done, err)
	}
	p := commitReadBack(t, in, dir, "disk.img", want)
	if a := allocated(t, p); a > 256<<10 {
		t.Errorf("%d bytes allocated for 10,000 bytes of data", a)
	}

	d := openTree(t, t.TempDir())
	in2, err := d.Create("dense.img")
	if err != nil {
		t.Fatal(err)
	}
	defer in2.Abort(false)
	if err := in2.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if done, err := in2.(skipper).SkipZerosAt(0, mib); done || err != nil {
		t.Errorf("a receive that is not sparse took zeros as a hole (%v, %v)", done, err)
	}
}
