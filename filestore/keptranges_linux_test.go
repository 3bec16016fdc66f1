package filestore_test

import (
	"bytes"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// A partial kept with ranges past its prefix (KeepRanges, as after a
// data connection stalled) gives them back to the next attempt
// (PartialKept) with their CRCs, as many as asked; the prefix recorded
// is trusted as it is, even where the gap after it holds bytes (a file
// system without holes), and a partial opened and left alone keeps its
// record.
func TestPartialKeepsRangesPastItsPrefix(t *testing.T) {
	const mib = 1 << 20
	data := make([]byte, 5*mib)
	for i := range data {
		data[i] = byte(i*7 + i>>12 + 1)
	}
	crcOf := func(off, end int64) uint32 { return crc32.Checksum(data[off:end], crc32.MakeTable(crc32.Castagnoli)) }
	for fsName, root := range recoveryDirs(t) {
		t.Run(fsName, func(t *testing.T) {
			d, err := filestore.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			open := func() kermit.KeptPartial {
				t.Helper()
				in, err := d.Create("k.bin")
				if err != nil {
					t.Fatal(err)
				}
				return in.(kermit.KeptPartial)
			}
			kp := open()
			in := kp.(kermit.Incoming)
			if err := in.Truncate(0); err != nil {
				t.Fatal(err)
			}
			// Received: [0,1), [2,3), [4,5) MiB; in the gap [1,2) MiB
			// bytes that are not data (what a file system without
			// holes, or a write that failed half way, leaves).
			for _, r := range [][2]int64{{0, mib}, {2 * mib, 3 * mib}, {4 * mib, 5 * mib}} {
				if _, err := in.WriteAt(data[r[0]:r[1]], r[0]); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := in.WriteAt([]byte("not data"), mib+100); err != nil {
				t.Fatal(err)
			}
			if n, err := kp.KeepRanges(mib, [][2]int64{{2 * mib, 3 * mib}, {4 * mib, 5 * mib}}); err != nil || n != 5*mib {
				t.Fatalf("KeepRanges = %d, %v; want %d", n, err, 5*mib)
			}
			if err := in.Abort(true); err != nil {
				t.Fatal(err)
			}

			// Opened and left alone: the record stays.
			if err := open().(kermit.Incoming).Abort(true); err != nil {
				t.Fatal(err)
			}

			want := []framing.KeptRange{{Off: 2 * mib, End: 3 * mib, CRC: crcOf(2*mib, 3*mib)}, {Off: 4 * mib, End: 5 * mib, CRC: crcOf(4*mib, 5*mib)}}
			kp = open()
			size, crc, kept, err := kp.PartialKept(64)
			if err != nil || size != mib || crc != crcOf(0, mib) || !slices.Equal(kept, want) {
				t.Fatalf("PartialKept(64) = %d, %08x, %+v, %v; want %d, %08x, %+v", size, crc, kept, err, mib, crcOf(0, mib), want)
			}
			kp.(kermit.Incoming).Abort(true)

			// Asked for one range: the file is cut after it.
			kp = open()
			if size, _, kept, err = kp.PartialKept(1); err != nil || size != mib || !slices.Equal(kept, want[:1]) {
				t.Fatalf("PartialKept(1) = %d, %+v, %v; want %d, %+v", size, kept, err, mib, want[:1])
			}
			part := filepath.Join(root, ".k.bin"+filestore.PartSuffix)
			if fi, err := os.Stat(part); err != nil || fi.Size() != 3*mib {
				t.Fatalf("partial after PartialKept(1): %v, %v; want %d bytes", fi, err, 3*mib)
			}
			kp.(kermit.Incoming).Abort(true)

			// Asked for none (a sender that takes none): cut at the
			// prefix, whatever the gap holds.
			in = open().(kermit.Incoming)
			size, crc, err = in.Partial()
			if err != nil || size != mib || crc != crcOf(0, mib) {
				t.Fatalf("Partial = %d, %08x, %v; want %d, %08x", size, crc, err, mib, crcOf(0, mib))
			}
			in.Abort(false)
		})
	}
}

// The ranges a resume was given are read again before the file is
// named: their bytes were not sent, and one changed on the disk since
// (another process writing into the partial) fails the file rather
// than be named received.
func TestCommitChecksTheKeptRangesAgain(t *testing.T) {
	const mib = 1 << 20
	data := make([]byte, 3*mib)
	for i := range data {
		data[i] = byte(i*13 + 5)
	}
	for _, meddle := range []bool{false, true} {
		root := t.TempDir()
		d, err := filestore.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		in, err := d.Create("c.bin")
		if err != nil {
			t.Fatal(err)
		}
		in.Truncate(0)
		in.WriteAt(data[:mib], 0)
		in.WriteAt(data[2*mib:], 2*mib)
		in.(kermit.KeptPartial).KeepRanges(mib, [][2]int64{{2 * mib, 3 * mib}})
		in.Abort(true)

		in, err = d.Create("c.bin")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, kept, err := in.(kermit.KeptPartial).PartialKept(64); err != nil || len(kept) != 1 {
			t.Fatalf("PartialKept: %+v, %v", kept, err)
		}
		if meddle {
			f, err := os.OpenFile(filepath.Join(root, ".c.bin"+filestore.PartSuffix), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte{^data[2*mib+7]}, 2*mib+7)
			f.Close()
		}
		if _, err := in.WriteAt(data[mib:2*mib], mib); err != nil {
			t.Fatal(err)
		}
		err = in.Commit(time.Time{}, 0o644)
		_, statErr := os.Stat(filepath.Join(root, "c.bin"))
		if meddle && (err == nil || statErr == nil) {
			t.Errorf("a kept range changed on the disk: Commit %v, file named: %v", err, statErr == nil)
		}
		if !meddle && (err != nil || statErr != nil) {
			t.Errorf("Commit %v, %v", err, statErr)
		}
		if err != nil {
			in.Abort(true)
		}
		d.Close()
	}
}

// A resumed file complete and checked whose naming fails is kept whole
// for the next attempt, not cut back to the ranges it began with
// (review 51).
func TestFailedCommitAfterKeptResumeKeepsItAll(t *testing.T) {
	const mib = 1 << 20
	data := make([]byte, 3*mib)
	for i := range data {
		data[i] = byte(i*11 + 3)
	}
	root := t.TempDir()
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in, _ := d.Create("c.bin")
	in.Truncate(0)
	in.WriteAt(data[:mib], 0)
	in.WriteAt(data[2*mib:], 2*mib)
	in.(kermit.KeptPartial).KeepRanges(mib, [][2]int64{{2 * mib, 3 * mib}})
	in.Abort(true)

	in, _ = d.Create("c.bin")
	if _, _, kept, err := in.(kermit.KeptPartial).PartialKept(64); err != nil || len(kept) != 1 {
		t.Fatalf("PartialKept: %+v, %v", kept, err)
	}
	in.WriteAt(data[mib:2*mib], mib)
	// The directory made immutable meanwhile: the rename fails (for
	// root too), and the partial stays where it is.
	if out, err := exec.Command("chattr", "+i", root).CombinedOutput(); err != nil {
		t.Skipf("cannot make %s immutable (chattr +i needs root and a file system that has the flag): %v %s", root, err, out)
	}
	err = in.Commit(time.Time{}, 0o644)
	if out, err := exec.Command("chattr", "-i", root).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i: %v %s", err, out)
	}
	if err == nil {
		t.Fatal("Commit in an immutable directory succeeded")
	}
	in.Abort(true)

	in, _ = d.Create("c.bin")
	defer in.Abort(false)
	size, crc, err := in.Partial()
	if want := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)); err != nil || size != 3*mib || crc != want {
		t.Errorf("Partial after the failed commit = %d, %08x, %v; want all %d bytes, %08x", size, crc, err, 3*mib, want)
	}
}

// A sparse receive resumed with kept ranges makes their gaps holes and
// leaves the zeros sent into them as holes (QA aa: a resumed 20 GiB image
// with 4 MB of data took 531 MiB), and whatever a gap held that was not
// data is gone.
func TestSparseResumeKeepsItsGapsHoles(t *testing.T) {
	const mib = 1 << 20
	data := make([]byte, 8*mib) // zeros but for the first and last MiB
	for i := range mib {
		data[i], data[7*mib+i] = byte(i*7+1), byte(i*5+2)
	}
	root := t.TempDir()
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.Sparse = true
	in, _ := d.Create("s.img")
	in.Truncate(0)
	in.WriteAt(data[:mib], 0)
	in.WriteAt(data[7*mib:], 7*mib)
	in.WriteAt([]byte("not data"), 3*mib) // in the gap
	in.(kermit.KeptPartial).KeepRanges(mib, [][2]int64{{7 * mib, 8 * mib}})
	in.Abort(true)

	in, _ = d.Create("s.img")
	if size, _, kept, err := in.(kermit.KeptPartial).PartialKept(64); err != nil || size != mib || len(kept) != 1 {
		t.Fatalf("PartialKept = %d, %+v, %v", size, kept, err)
	}
	zeros := make([]byte, mib)
	for off := int64(mib); off < 7*mib; off += mib {
		if _, err := in.WriteAt(zeros, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Commit(time.Time{}, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "s.img"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file differs from what was sent (%v)", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(root, "s.img"), &st); err != nil {
		t.Fatal(err)
	}
	if a := st.Blocks * 512; a > 3*mib {
		t.Errorf("%d bytes allocated for 2 MiB of data: the gaps' zeros were written", a)
	}
}
