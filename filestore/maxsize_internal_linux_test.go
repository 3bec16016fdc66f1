package filestore

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A file announced larger than this process may write is refused
// before any of its data (as a 5 GiB file to FAT is).
func TestTooBigIsRefusedBeforeItsData(t *testing.T) {
	old := fileSizeLimit
	fileSizeLimit = func() uint64 { return 1 << 20 }
	t.Cleanup(func() { fileSizeLimit = old })
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in, err := d.Create("big")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Abort(false)
	err = in.(*incoming).WillHold(2<<20, false)
	if !errors.Is(err, unix.EFBIG) || !strings.Contains(err.Error(), "at most 1048576") {
		t.Fatalf("WillHold of 2 MiB under a 1 MiB limit: %v", err)
	}
	if err := in.(*incoming).WillHold(1<<20, false); err != nil {
		t.Fatalf("WillHold of 1 MiB: %v", err)
	}
}

// A write past the largest file the destination allows (RLIMIT_FSIZE
// here, FAT's 4 GiB there) fails with words that say so, and the
// partial is not kept: no resume could finish it (QA ad: 4 GiB left).
// Run in a child process, whose file size limit is its own.
func TestWritePastTheLimitKeepsNoPartial(t *testing.T) {
	if dir := os.Getenv("KERF_EFBIG_DIR"); dir != "" {
		efbigChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWritePastTheLimitKeepsNoPartial$")
	cmd.Env = append(os.Environ(), "KERF_EFBIG_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "result"))
	if !strings.Contains(string(got), "file too large") || !strings.Contains(string(got), "holds no file larger than about 65536") {
		t.Errorf("the write's error: %q", got)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "store"))
	for _, e := range ents {
		t.Errorf("left in the store: %s", e.Name())
	}
}

func efbigChild(dir string) {
	fail := func(err error) {
		os.WriteFile(filepath.Join(dir, "result"), []byte("setup: "+err.Error()), 0o644)
		os.Exit(0)
	}
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 64 << 10, Max: unix.RLIM_INFINITY}); err != nil {
		fail(err)
	}
	store := filepath.Join(dir, "store")
	os.Mkdir(store, 0o755)
	d, err := Open(store)
	if err != nil {
		fail(err)
	}
	in, err := d.Create("big")
	if err != nil {
		fail(err)
	}
	in.(*incoming).WillHold(-1, false) // unknown size: not refused before
	_, werr := in.WriteAt(make([]byte, 256<<10), 0)
	in.Abort(true)
	d.Close()
	msg := "no error"
	if werr != nil {
		msg = werr.Error()
	}
	os.WriteFile(filepath.Join(dir, "result"), []byte(msg), 0o644)
	os.Exit(0)
}
