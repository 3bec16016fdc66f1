package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// smallTmpfs mounts a tmpfs of size bytes on a new directory, unmounted
// when the test ends (mounting needs root).
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	return mnt
}

// fillWhenPartial waits for the partial of name in dir to appear, then
// fills dir's file system: the disk fills under a transfer whose file
// fitted when it began (another writer took the space).
func fillWhenPartial(t *testing.T, dir, name string) {
	t.Helper()
	waitFor(t, "the partial of "+name, func() bool { return fileSize(filepath.Join(dir, partName(name))) > 0 })
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 256<<10)
	for i := range chunk {
		chunk[i] = byte(i) | 1 // not zeros: nothing a file system could skip
	}
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// A file whose receiver's disk fills under it fails alone, with the
// receiver's reason, its partial kept for a resume; the receiver stops
// its sender on the data path rather than take the rest across (QA ar
// F8: a 1 GiB file whose server filled its disk 200 MB in crossed whole).
// The transfers are held to 8 MB/s, so that the disk fills while they
// go.
func TestDiskFullStopsTheSender(t *testing.T) {
	big := randomBytes(48<<20, 11)
	t.Run("send", func(t *testing.T) {
		root, local := smallTmpfs(t, "64m"), t.TempDir()
		writeFile(t, filepath.Join(local, "big.bin"), big)
		srv := startServer(t, root, serverOpts{})
		r := runWhile(t, srv, local, func() { fillWhenPartial(t, root, "big.bin") }, []string{"--json"}, "send", "--limit-rate", "8M", "big.bin", srv.addr)
		diskFullSaid(t, r)
		waitLogLine(t, srv, "its sender was stopped")
		if n := fileSize(filepath.Join(root, partName("big.bin"))); n <= 0 {
			t.Errorf("the server's partial of big.bin: %d bytes", n)
		}
		noFile(t, filepath.Join(root, "big.bin"))
	})
	t.Run("get", func(t *testing.T) {
		root, local := t.TempDir(), smallTmpfs(t, "64m")
		writeFile(t, filepath.Join(root, "big.bin"), big)
		srv := startServer(t, root, serverOpts{args: []string{"--limit-rate", "8M"}})
		r := runWhile(t, srv, local, func() { fillWhenPartial(t, local, "big.bin") }, []string{"--json", "--log-level", "info"}, "get", target(srv.addr, "big.bin"), ".")
		diskFullSaid(t, r)
		if !strings.Contains(r.stdout, "its sender was stopped") && !strings.Contains(r.stderr, "its sender was stopped") {
			t.Errorf("the client did not stop the server's sending:\n%s", r)
		}
		if n := fileSize(filepath.Join(local, partName("big.bin"))); n <= 0 {
			t.Errorf("the partial of big.bin here: %d bytes", n)
		}
		noFile(t, filepath.Join(local, "big.bin"))
	})
}

// runWhile is run, with during called once the command has started.
func runWhile(t *testing.T, srv *server, dir string, during func(), global []string, sub string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, dir, global, sub, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	during()
	return resultOf(t, sub, cmd.Wait(), &out, &errb)
}

// diskFullSaid checks that big.bin failed for want of space, said in its
// file_error, and that the transfer's exit code says files failed.
func diskFullSaid(t *testing.T, r result) {
	t.Helper()
	if r.code != 4 {
		t.Fatalf("want exit 4 (a file failed):\n%s", r)
	}
	for _, e := range eventsNamed(parseEvents(t, r.stdout), "file_error") {
		if e.Name == "big.bin" && strings.Contains(e.Error, "no space left on device") {
			return
		}
	}
	t.Fatalf("no file_error for big.bin saying the disk is full:\n%s", r)
}
