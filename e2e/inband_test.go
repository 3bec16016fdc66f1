package e2e

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A server whose data port cannot be reached from the client (here it
// listens on another address than the control port's): a send fails
// naming --in-band, and with --in-band sends, gets and lists go on the
// control connection; --in-band beside a data connection's flag on the
// command line is a usage error, one set in the environment gives way.
func TestInBandCLI(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{args: []string{"--data-listen", "127.0.0.2:0"}})
	writeFile(t, filepath.Join(local, "f.bin"), randomBytes(2<<20, 51))

	r := run(t, srv, local, nil, "send", "f.bin", target(srv.addr, "/"))
	if r.code != 4 || !strings.Contains(r.stderr, "--in-band") {
		t.Fatalf("send with the data port unreachable: %s; want exit 4 naming --in-band", r)
	}
	r = mustRun(t, srv, local, []string{"--json"}, "send", "--in-band", "f.bin", target(srv.addr, "/"))
	sameFile(t, filepath.Join(local, "f.bin"), filepath.Join(root, "f.bin"))
	done := eventsNamed(parseEvents(t, r.stdout), "done")
	if len(done) != 1 || done[0].Data != "" {
		t.Errorf("done events %+v: want one, its data none (in-band)", done)
	}
	// Each file_done says the file's CRC-32C, as on the data channel
	// (QA: none in band).
	want := fmt.Sprintf("%08x", crc32.Checksum(randomBytes(2<<20, 51), crc32.MakeTable(crc32.Castagnoli)))
	if d := eventsNamed(parseEvents(t, r.stdout), "file_done"); len(d) != 1 || d[0].CRC32C != want {
		t.Errorf("send --in-band: file_done %+v; want crc32c %s", d, want)
	}
	r = mustRun(t, srv, back, []string{"--json"}, "get", "--in-band", target(srv.addr, "/f.bin"), ".")
	sameFile(t, filepath.Join(local, "f.bin"), filepath.Join(back, "f.bin"))
	if d := eventsNamed(parseEvents(t, r.stdout), "file_done"); len(d) != 1 || d[0].CRC32C != want {
		t.Errorf("get --in-band: file_done %+v; want crc32c %s", d, want)
	}
	if r := mustRun(t, srv, back, nil, "ls", "--in-band", target(srv.addr, "/")); !strings.Contains(r.stdout, "f.bin") {
		t.Errorf("ls --in-band: %s", r)
	}

	for _, flag := range []string{"--quic", "--plain-data", "-z", "--streams=2", "--classic"} {
		if r := run(t, srv, local, nil, "send", "--in-band", flag, "f.bin", target(srv.addr, "/")); r.code != 2 {
			t.Errorf("send --in-band %s: %s; want a usage error", flag, r)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, local, nil, "send", "--in-band", "f.bin", target(srv.addr, "/again.bin"))
	cmd.Env = append(cmd.Env, "KERF_QUIC=1", "KERF_COMPRESS=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("send --in-band with KERF_QUIC and KERF_COMPRESS set: %v\n%s", err, out.String())
	}
	sameFile(t, filepath.Join(local, "f.bin"), filepath.Join(root, "again.bin"))
}

// A file whose size does not tell its length (/proc/version: size 0),
// among others, fails alone in packets, said as such, and the files
// after it go (QA: the receiver's length check ended the transfer).
func TestInBandFileLongerThanItsSize(t *testing.T) {
	if _, err := os.Stat("/proc/version"); err != nil {
		t.Fatalf("this test needs /proc/version: %v", err)
	}
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "w.txt"), []byte("hi\n"))
	r := run(t, srv, local, nil, "send", "--in-band", "/proc/version", "w.txt", target(srv.addr, "proc/"))
	if r.code != 4 || !strings.Contains(r.stderr, "where its size said 0") {
		t.Errorf("send of /proc/version and w.txt: %s; want exit 4 naming the size", r)
	}
	sameFile(t, filepath.Join(local, "w.txt"), filepath.Join(root, "proc/w.txt"))
	noFile(t, filepath.Join(root, "proc/version"))
	// Named alone, it is read to its end, as a pipe is (stdin.go).
	r = run(t, srv, local, nil, "send", "--in-band", "/proc/version", target(srv.addr, "v.txt"))
	if r.code != 0 {
		t.Errorf("send of /proc/version alone as v.txt: %s", r)
	}
	got, _ := os.ReadFile(filepath.Join(root, "v.txt"))
	if want, _ := os.ReadFile("/proc/version"); len(want) == 0 || !bytes.Equal(got, want) {
		t.Errorf("v.txt is not /proc/version")
	}
}
