package filestore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"kerf/filestore"
	"kerf/framing"
)

// removePrefixAttr takes away the record of a kept partial's prefix, as
// if the receiver had been killed instead of stopping.
func removePrefixAttr(p string) error { return unix.Removexattr(p, "user.kerf.prefix") }

// A sparse partial kept by a receiver that stopped cleanly resumes from
// its end, not from its first hole: the holes inside it are zeros it
// received. A partial whose record is gone (left by a crash) is still
// cut at its first hole.
func TestSparsePartialKeptResumesFromItsEnd(t *testing.T) {
	const kib = 1 << 10
	dir, d := openSparse(t)
	zero := make([]byte, 64*kib)
	data := bytes.Repeat([]byte("disk"), 16*kib) // 64 KiB
	in, err := d.Create("img")
	if err != nil {
		t.Fatal(err)
	}
	in.WriteAt(data, 0)
	in.WriteAt(zero, 64*kib) // a hole
	in.WriteAt(data, 128*kib)
	in.Abort(true)
	want := append(append(append([]byte(nil), data...), zero...), data...)

	in, err = d.Create("img")
	if err != nil {
		t.Fatal(err)
	}
	size, crc, err := in.Partial()
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(want)) || crc != framing.CRC32C(want) {
		t.Errorf("kept partial: Partial() = %d, %08x; want %d, %08x", size, crc, len(want), framing.CRC32C(want))
	}
	in.Abort(true)

	// Without the record (as after kill -9), only the first hole's prefix.
	tmp := filepath.Join(dir, ".img"+filestore.PartSuffix)
	if err := removePrefixAttr(tmp); err != nil {
		t.Fatal(err)
	}
	in, err = d.Create("img")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Abort(false)
	if size, _, err := in.Partial(); err != nil || size != 64*kib {
		t.Errorf("partial without its record: Partial() = %d, %v; want %d (its first hole)", size, err, 64*kib)
	}
}

// The record is only ever made by a session that prepared the partial
// (Partial or Truncate) and only ever trusted once: a partial opened and
// abandoned before it was prepared records none of its holes as data,
// and a partial being received carries no record from before, so that a
// receiver killed in the middle leaves none of the old behind.
func TestPrefixRecordOnlyFromPreparedSessions(t *testing.T) {
	const kib = 1 << 10
	dir, d := openSparse(t)
	tmp := filepath.Join(dir, ".img"+filestore.PartSuffix)
	data := bytes.Repeat([]byte("x"), 4*kib)
	d.Sparse = false // the leftover's hole is made by hand below
	// A leftover as a crash leaves it: data, a hole (a block never
	// written), data.
	writeLeftover := func() {
		t.Helper()
		f, err := os.Create(tmp)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt(data, 0)
		f.WriteAt(data, 1024*kib) // [4 KiB, 1 MiB) never written
		f.Close()
	}
	writeLeftover()
	// Opened, then the session is lost before it prepares it.
	in, err := d.Create("img")
	if err != nil {
		t.Fatal(err)
	}
	in.Abort(true)
	if _, err := unix.Getxattr(tmp, "user.kerf.prefix", make([]byte, 32)); err == nil {
		t.Error("an unprepared partial was given a record of its length")
	}
	in, err = d.Create("img")
	if err != nil {
		t.Fatal(err)
	}
	if size, _, err := in.Partial(); err != nil || size != 4*kib {
		t.Errorf("Partial() = %d, %v; want %d, the first hole", size, err, 4*kib)
	}
	in.Abort(false)

	// A kept partial with a record: opening it takes the record off the
	// file, so a receiver killed while writing into it leaves none.
	writeLeftover()
	if err := unix.Setxattr(tmp, "user.kerf.prefix", []byte("1052672"), 0); err != nil {
		t.Fatal(err)
	}
	in, err = d.Create("img")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Getxattr(tmp, "user.kerf.prefix", make([]byte, 32)); err == nil {
		t.Error("the record is still on a partial being received")
	}
	// A fresh start (Truncate(0)) voids the record for this session too.
	in.Truncate(0)
	in.WriteAt(data, 0)
	in.WriteAt(data, 1024*kib)
	if size, _, err := in.Partial(); err != nil || size != 4*kib {
		t.Errorf("after Truncate(0): Partial() = %d, %v; want %d", size, err, 4*kib)
	}
	in.Abort(false)
}
