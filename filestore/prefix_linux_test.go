package filestore_test

import (
	"bytes"
	"hash/crc32"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"kerf/filestore"
)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

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
	if size != int64(len(want)) || crc != crc32c(want) {
		t.Errorf("kept partial: Partial() = %d, %08x; want %d, %08x", size, crc, len(want), crc32c(want))
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
