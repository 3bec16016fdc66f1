package filestore_test

import (
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"kerf/filestore"
)

// recoveryDirs are the directories the hole tests run in: the test's
// temporary directory (whatever file system that is) and tmpfs.
func recoveryDirs(t *testing.T) map[string]string {
	dirs := map[string]string{"tempdir": t.TempDir()}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		shm, err := os.MkdirTemp("/dev/shm", "kerf-filestore-test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(shm) })
		dirs["tmpfs"] = shm
	}
	return dirs
}

// A partial left by a receiver killed mid-transfer (no one cut it to its
// gap-free prefix) has holes where blocks had not arrived. Partial cuts
// it at the first hole and reports that prefix, so recovery resumes
// there instead of failing the CRC check and starting from byte 0.
func TestPartialCutAtFirstHole(t *testing.T) {
	const mib = 1 << 20
	data := make([]byte, 3*mib)
	for i := range data {
		data[i] = byte(i*7 + i>>12) // no zero pages: nothing a file system could store as a hole
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for fsName, root := range recoveryDirs(t) {
		t.Run(fsName, func(t *testing.T) {
			d, err := filestore.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()

			// Blocks [0,1MiB) and [2MiB,3MiB) arrived, [1MiB,2MiB) did not.
			part := filepath.Join(root, ".holey.bin"+filestore.PartSuffix)
			f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(data[2*mib:], 2*mib); err != nil { // pwrite
				t.Fatal(err)
			}
			if _, err := f.WriteAt(data[:mib], 0); err != nil {
				t.Fatal(err)
			}
			hole, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE)
			f.Close()
			wantSize := int64(mib)
			if err != nil || hole == 3*mib {
				// No hole reporting here: the file counts as data, as before.
				t.Logf("%s reports no holes (%d, %v)", fsName, hole, err)
				wantSize = 3 * mib
			}

			in, err := d.Create("holey.bin")
			if err != nil {
				t.Fatal(err)
			}
			n, crc, err := in.Partial()
			want := crc32.Checksum(data[:wantSize], castagnoli)
			if err != nil || n != wantSize || crc != want {
				t.Errorf("Partial = %d, %08x, %v; want %d, %08x", n, crc, err, wantSize, want)
			}
			if fi, err := os.Stat(part); err != nil {
				t.Error(err)
			} else if fi.Size() != wantSize {
				t.Errorf("partial file after Partial: %d bytes; want %d", fi.Size(), wantSize)
			}
			in.Abort(false)

			// A partial with no holes is reported, and left, whole.
			if err := os.WriteFile(part, data, 0o600); err != nil {
				t.Fatal(err)
			}
			in, err = d.Create("holey.bin")
			if err != nil {
				t.Fatal(err)
			}
			n, crc, err = in.Partial()
			if want := crc32.Checksum(data, castagnoli); err != nil || n != 3*mib || crc != want {
				t.Errorf("Partial of a whole file = %d, %08x, %v; want %d, %08x", n, crc, err, 3*mib, want)
			}
			if fi, err := os.Stat(part); err != nil {
				t.Error(err)
			} else if fi.Size() != 3*mib {
				t.Errorf("whole partial file changed: %d bytes", fi.Size())
			}
			in.Abort(false)

			// A fresh (empty) temporary file has nothing to recover.
			in, err = d.Create("empty.bin")
			if err != nil {
				t.Fatal(err)
			}
			if n, _, err := in.Partial(); err != nil || n != 0 {
				t.Errorf("Partial of an empty file = %d, %v", n, err)
			}
			in.Abort(false)
		})
	}
}
