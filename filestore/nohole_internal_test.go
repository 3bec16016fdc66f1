package filestore

import (
	"bytes"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A partial left on exFAT by a receiver killed outright (no record: the
// file system keeps no extended attributes; no holes: a block that never
// came reads as the zeros the file system filled it with) resumes from
// its first missing block, not from 0 (QA ad: each resume after a kill
// -9 sent the whole file again, the gap's zeros failing the check of
// the prefix).
func TestExFATKilledPartialResumesAtItsGap(t *testing.T) {
	mnt := mountExFAT(t)
	const mib = 1 << 20
	data := make([]byte, 5*mib)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	// Blocks 0, 1, 3, 4 arrived over two streams; block 2 did not.
	f, err := os.OpenFile(filepath.Join(mnt, TempName("disk.img")), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []int{0, 1, 4, 3} {
		if _, err := f.WriteAt(data[b*mib:(b+1)*mib], int64(b*mib)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	d, err := Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in, err := d.Create("disk.img")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Abort(false)
	size, crc, err := in.Partial()
	want := crc32.Checksum(data[:2*mib], crc32.MakeTable(crc32.Castagnoli))
	if err != nil || size != 2*mib || crc != want {
		t.Fatalf("Partial: %d bytes, CRC %08x, %v; want %d, %08x (the blocks before the gap)", size, crc, err, 2*mib, want)
	}
	if _, err := in.WriteAt(data[2*mib:], 2*mib); err != nil {
		t.Fatal(err)
	}
	if err := in.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "disk.img")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("disk.img: %d bytes, %v; want the %d sent", len(got), err, len(data))
	}
}

// A partial whose cut fails (a file system over its quota refuses even
// a truncate) is kept as it is, with no record of its length, and the
// next resume finds its data again up to its first hole (QA aj: it was
// removed, and a resume sent 9 MiB again from 0).
func TestUncutPartialIsKept(t *testing.T) {
	root := t.TempDir()
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const mib = 1 << 20
	data := make([]byte, 3*mib)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	in, err := d.Create("q.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := in.Partial(); err != nil {
		t.Fatal(err)
	}
	// Blocks 0 and 2 came; 1 did not.
	in.WriteAt(data[:mib], 0)
	in.WriteAt(data[2*mib:], 2*mib)
	defer func(was func(int, int64) error) { ftruncate = was }(ftruncate)
	ftruncate = func(int, int64) error { return syscall.EDQUOT }
	kp := in.(interface {
		KeepRanges(int64, [][2]int64) (int64, error)
	})
	if _, err := kp.KeepRanges(mib, nil); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("KeepRanges with the cut refused: %v", err)
	}
	if err := in.Abort(true); err != nil {
		t.Fatal(err)
	}
	ftruncate = syscall.Ftruncate
	if fi, err := os.Stat(filepath.Join(root, TempName("q.bin"))); err != nil || fi.Size() != 3*mib {
		t.Fatalf("the uncut partial: %v, %v; want it kept whole, 3 MiB", fi, err)
	}
	in, err = d.Create("q.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Abort(false)
	size, crc, err := in.Partial()
	want := crc32.Checksum(data[:mib], crc32.MakeTable(crc32.Castagnoli))
	if err != nil || size != mib || crc != want {
		t.Errorf("resumed from %d bytes (CRC %08x, %v); want the %d before the gap (%08x)", size, crc, err, mib, want)
	}
}

// A name exFAT does not take is said to be the name's fault, not a
// missing file (QA aj: exfat-fuse answered ENOENT for a:b).
func TestExFATRefusedNameSaysWhy(t *testing.T) {
	mnt := mountExFAT(t)
	d, err := Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range []string{"a:b", "q?", "star*", `quo"te`} {
		in, err := d.Create(name)
		if err == nil {
			in.Abort(false)
			t.Errorf("%s: created on exFAT", name)
			continue
		}
		if !strings.Contains(err.Error(), "takes none of") {
			t.Errorf("%s: %v; want it said the file system does not take the name", name, err)
		}
	}
}

// Zeros that are data, further from a partial's end than blocks land
// out of order, do not cut it: a disk image kept cleanly on exFAT
// resumes from its end, not from its first zeros (review 55).
func TestExFATPartialKeepsZerosFarFromItsEnd(t *testing.T) {
	defer func(was int64) { gapWindow = was }(gapWindow)
	gapWindow = 2 << 20
	mnt := mountExFAT(t)
	const mib = 1 << 20
	data := make([]byte, 5*mib)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range data {
		if i < mib || i >= 2*mib {
			data[i] = byte(rng.Uint32())
		}
	}
	if err := os.WriteFile(filepath.Join(mnt, TempName("img")), data, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in, err := d.Create("img")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Abort(false)
	size, crc, err := in.Partial()
	if want := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)); err != nil || size != 5*mib || crc != want {
		t.Errorf("Partial: %d bytes, CRC %08x, %v; want all %d (%08x): its zeros are 3 MiB from its end", size, crc, err, 5*mib, want)
	}
}
