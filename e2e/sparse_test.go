package e2e

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// makeSparse writes a 64 MiB file that is a hole but for 64 KiB of data
// at its start, middle and end.
func makeSparse(t *testing.T, p string) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := randomBytes(64<<10, 40)
	for _, off := range []int64{0, 32 << 20, 64<<20 - 64<<10} {
		if _, err := f.WriteAt(data, off); err != nil {
			t.Fatal(err)
		}
	}
}

func allocatedBytes(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// wireOfHoles checks that a transfer of makeSparse's file sent its
// holes as blocks of zeros: the data that crossed is the three 1 MiB
// blocks that hold its data, not 64 MiB (--json's done).
func wireOfHoles(t *testing.T, r result) {
	t.Helper()
	done := eventsNamed(parseEvents(t, r.stdout), "done")
	if len(done) != 1 || done[0].WireBytes <= 0 || done[0].WireBytes > 3<<20 {
		t.Errorf("want a done whose wire_bytes are at most 3 MiB (holes as blocks of zeros):\n%s", r.stdout)
	}
}

// --sparse on the receiving side (get, or a server's serve) keeps a
// sparse file's holes; without it the copy is whole. Either way the
// holes cross as blocks of zeros.
func TestSparseTransfers(t *testing.T) {
	t.Run("get", func(t *testing.T) {
		root, local := t.TempDir(), t.TempDir()
		src := filepath.Join(root, "disk.img")
		makeSparse(t, src)
		srv := startServer(t, root, serverOpts{})
		r := mustRun(t, srv, local, []string{"--json"}, "get", "--sparse", target(srv.addr, "disk.img"), ".")
		wireOfHoles(t, r)
		dst := filepath.Join(local, "disk.img")
		sameFile(t, src, dst)
		if a := allocatedBytes(t, dst); a > 1<<20 {
			t.Errorf("get --sparse: %d bytes allocated for 192 KiB of data", a)
		}
		r = mustRun(t, srv, local, []string{"--json"}, "get", target(srv.addr, "disk.img"), "whole/")
		wireOfHoles(t, r)
		sameFile(t, src, filepath.Join(local, "whole", "disk.img"))
		if a := allocatedBytes(t, filepath.Join(local, "whole", "disk.img")); a < 60<<20 {
			t.Errorf("get without --sparse: only %d bytes allocated; the test cannot tell", a)
		}
	})
	t.Run("serve", func(t *testing.T) {
		root, local := t.TempDir(), t.TempDir()
		src := filepath.Join(local, "disk.img")
		makeSparse(t, src)
		srv := startServer(t, root, serverOpts{args: []string{"--sparse"}})
		r := mustRun(t, srv, local, []string{"--json"}, "send", "disk.img", srv.addr)
		wireOfHoles(t, r)
		dst := filepath.Join(root, "disk.img")
		sameFile(t, src, dst)
		if a := allocatedBytes(t, dst); a > 1<<20 {
			t.Errorf("serve --sparse: %d bytes allocated for 192 KiB of data", a)
		}
	})
}

// A --sparse get of a disk image that starts with a run of zeros, cut
// off midway, resumes from where it stopped, not from its first hole
// (the run of zeros, which the kept partial holds as a hole).
func TestSparseGetResumesAfterTheHoles(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, false)
	const zeros, size = 8 << 20, 16 << 20
	src := filepath.Join(root, "disk.img")
	writeFile(t, src, append(make([]byte, zeros), randomBytes(size-zeros, 41)...))
	dst := filepath.Join(local, "disk.img")

	fs.data.cutDown.Store(12 << 20)
	r := run(t, fs.server, local, []string{"--json"}, "get", "--reconnect", "0", "--sparse", "--streams", "1", target(fs.addr(), "disk.img"), ".")
	if r.code != 4 {
		t.Fatalf("want exit 4 from the cut get, got %s", r)
	}
	kept := fileSize(partName(dst))
	if kept <= zeros || kept >= size {
		t.Fatalf("client kept %d bytes of %d; want some past the %d zeros", kept, size, zeros)
	}

	fs.data.cutDown.Store(0)
	r = mustRun(t, fs.server, local, []string{"--json"}, "get", "--sparse", "--streams", "1", "--resume", target(fs.addr(), "disk.img"), ".")
	checkDoneEvent(t, r, "disk.img", size, kept)
	sameFile(t, src, dst)
}

// A --sparse get of a disk image that starts with a run of zeros, its
// client killed (SIGKILL: nothing recorded at its end) while a block
// past 30 MiB is held back, resumes from the gap-free prefix the client
// recorded as the data came (every 16 MiB), not from the
// partial's first hole, the zeros at byte 0 (QA: it began again).
func TestSparseGetResumesAfterClientKilled(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, true)
	const zeros, size, block = 4 << 20, 40 << 20, 1 << 20
	src := filepath.Join(root, "disk.img")
	writeFile(t, src, append(make([]byte, zeros), randomBytes(size-zeros, 42)...))
	dst := filepath.Join(local, "disk.img")
	part := partName(dst)

	fs.data.holdDownAt.Store(30<<20 + 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := kerfCmd(t, ctx, fs.server, local, nil, "get", "--sparse", "--streams", "2", target(fs.addr(), "disk.img"), ".")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "data past the held block", func() bool {
		fi, err := os.Stat(part)
		return err == nil && fi.Size() > 31<<20
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	fs.data.holdDownAt.Store(0)
	noFile(t, dst)

	r := mustRun(t, fs.server, local, []string{"--json"}, "get", "--sparse", "--streams", "2", "--resume", target(fs.addr(), "disk.img"), ".")
	// The record is made when the gap-free prefix has grown 16 MiB, which
	// blocks landing out of order may take past 16 MiB at once.
	done := eventsNamed(parseEvents(t, r.stdout), "file_done")
	if len(done) != 1 || done[0].Offset < 16<<20 || done[0].Offset > 30<<20 || done[0].Bytes != size-done[0].Offset {
		t.Errorf("resumed get: %+v\nwant it resumed between 16 and 30 MiB", done)
	}
	sameFile(t, src, dst)
	if a := allocatedBytes(t, dst); a > size-zeros+block {
		t.Errorf("%d bytes allocated for %d of data: the zeros were written", a, size-zeros)
	}
	if _, err := unix.Getxattr(dst, "user.kerf.prefix", make([]byte, 32)); err == nil {
		t.Error("the file under its name still carries the resume's record")
	}
}
