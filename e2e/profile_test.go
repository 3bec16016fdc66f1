package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// KERF_CPUPROFILE and KERF_TRACE make a client and a server (stopped
// with SIGTERM, as a service manager does) write a CPU profile and an
// execution trace of a real transfer, KERF_MEMPROFILE a heap profile; a file that cannot be made is a
// usage error before anything runs.
func TestProfileEnvironment(t *testing.T) {
	prof := t.TempDir()
	srvProf, srvTrace, srvHeap := filepath.Join(prof, "srv.pprof"), filepath.Join(prof, "srv.trace"), filepath.Join(prof, "srv.heap")
	cliProf, cliTrace := filepath.Join(prof, "cli.pprof"), filepath.Join(prof, "cli.trace")
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{env: []string{"KERF_CPUPROFILE=" + srvProf, "KERF_TRACE=" + srvTrace, "KERF_MEMPROFILE=" + srvHeap}})
	writeFile(t, filepath.Join(local, "f.bin"), randomBytes(4<<20, 9))

	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, local, []string{"-q"}, "send", "f.bin", srv.addr)
	cmd.Env = append(cmd.Env, "KERF_CPUPROFILE="+cliProf, "KERF_TRACE="+cliTrace)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kerf send: %v\n%s", err, out)
	}
	sameFile(t, filepath.Join(local, "f.bin"), filepath.Join(root, "f.bin"))

	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-srv.done:
	case <-time.After(10 * time.Second):
		t.Fatal("kerf serve did not stop on SIGTERM")
	}
	for _, p := range []string{srvProf, cliProf, srvHeap} {
		// A profile is gzip-compressed protobuf.
		if b, err := os.ReadFile(p); err != nil || len(b) < 20 || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: no profile (%d bytes, %v)", filepath.Base(p), len(b), err)
		}
	}
	for _, p := range []string{srvTrace, cliTrace} {
		if b, err := os.ReadFile(p); err != nil || !bytes.HasPrefix(b, []byte("go 1.")) || len(b) < 1000 {
			t.Errorf("%s: no execution trace (%d bytes, %v)", filepath.Base(p), len(b), err)
		}
	}

	bad := filepath.Join(prof, "missing-dir", "x.pprof")
	cmd = kerfCmd(t, ctx, nil, local, nil, "send", "f.bin", "127.0.0.1:1")
	cmd.Env = append(cmd.Env, "KERF_CPUPROFILE="+bad)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "KERF_CPUPROFILE") {
		t.Errorf("an unwritable KERF_CPUPROFILE: %v, %q; want an error naming it", err, out)
	}
}
