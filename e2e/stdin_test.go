package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runStdin runs a kerf client command with in as its standard input.
func runStdin(t *testing.T, srv *server, in []byte, global []string, sub string, args ...string) result {
	t.Helper()
	return runWithInput(t, srv, t.TempDir(), bytes.NewReader(in), global, sub, args...)
}

// `kerf send - HOST/DIR/NAME` stores standard input as DIR/NAME (the
// directory made), whole and exact, its length known only at its end;
// sent again, it replaces the file.
func TestSendStdin(t *testing.T) {
	root := t.TempDir()
	srv := startServer(t, root, serverOpts{})
	data := randomBytes(3<<20+17, 11)
	r := runStdin(t, srv, data, []string{"--json"}, "send", "-", target(srv.addr, "backups/day1/dump.bin"))
	if r.code != 0 {
		t.Fatalf("send -: %s", r)
	}
	got := filepath.Join(root, "backups", "day1", "dump.bin")
	if b, _ := os.ReadFile(got); !bytes.Equal(b, data) {
		t.Fatalf("stored %d bytes, not the %d sent", len(b), len(data))
	}
	done := eventsNamed(parseEvents(t, r.stdout), "file_done")
	if len(done) != 1 || done[0].Bytes != int64(len(data)) {
		t.Errorf("file_done events %+v, want one of %d bytes", done, len(data))
	}
	again := data[:1000]
	if r := runStdin(t, srv, again, nil, "send", "-", target(srv.addr, "backups/day1/dump.bin")); r.code != 0 {
		t.Fatalf("send - again: %s", r)
	}
	if b, _ := os.ReadFile(got); !bytes.Equal(b, again) {
		t.Errorf("sent again: stored %d bytes, want the %d of the second send", len(b), len(again))
	}
}

// What standard input cannot be is refused before any connection, and
// a name the server cannot take fails the command.
func TestSendStdinRefused(t *testing.T) {
	root := t.TempDir()
	srv := startServer(t, root, serverOpts{})
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"-", target(srv.addr, "")}, "needs a name"},
		{[]string{"-", target(srv.addr, "dir/")}, "needs a name"},
		{[]string{"-r", "-", target(srv.addr, "x")}, "-r"},
		{[]string{"--resume", "-", target(srv.addr, "x")}, "--resume"},
		{[]string{"-z", "-", target(srv.addr, "x")}, "--compress"},
		{[]string{"-", "-", target(srv.addr, "x")}, "alone"},
	} {
		r := runStdin(t, srv, []byte("data"), nil, "send", tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("send %v: %s; want exit 2 saying %q", tc.args, r, tc.says)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := runStdin(t, srv, []byte("data"), nil, "send", "-", target(srv.addr, "adir")); r.code != 4 {
		t.Errorf("send - onto a directory: %s; want exit 4", r)
	}
}

// Standard input to a C-Kermit server (--classic): the same D packets,
// into a directory there.
func TestSendStdinToCKermitServer(t *testing.T) {
	ckdir := t.TempDir()
	if err := os.Mkdir(filepath.Join(ckdir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, addr := ckermitServer(t, ckdir)
	data := randomBytes(200_000, 12)
	if r := runStdin(t, nil, data, nil, "send", "--classic", "-", target(addr, "in/piped.bin")); r.code != 0 {
		t.Fatalf("send --classic -: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(ckdir, "in", "piped.bin")); !bytes.Equal(b, data) {
		t.Errorf("C-Kermit stored %d bytes, not the %d sent", len(b), len(data))
	}
}

// An interrupt ends a send of standard input at once, while its input
// stays open and silent (a producer that writes nothing yet, a
// terminal): the read does not hold the command (review: it waited for
// the producer's end), and the exit says what came of it.
func TestSendStdinInterruptedWhileInputWaits(t *testing.T) {
	srv := startServer(t, t.TempDir(), serverOpts{})
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, t.TempDir(), []string{"--json"}, "send", "-", target(srv.addr, "waits.bin"))
	cmd.Stdin = pr
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	if _, err := pw.Write(randomBytes(100_000, 13)); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.Contains(sc.Text(), `"file_start"`) {
	}
	cmd.Process.Signal(syscall.SIGINT)
	exited := make(chan error, 1)
	go func() {
		for sc.Scan() {
		}
		exited <- cmd.Wait()
	}()
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		pw.Close() // let it end, to say so
		<-exited
		t.Fatalf("kerf send - did not end on SIGINT while its input stayed open:\n%s", errb.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(errb.String(), "cannot be resumed") {
		t.Errorf("after SIGINT: %v; want exit 130 saying it cannot be resumed:\n%s", err, errb.String())
	}
}

// A named pipe (mkfifo's; a shell's <(command) is one too) is sent as
// standard input is, in order until its writer ends: under its own name
// into a directory, or under the name given (QA: refused as not a
// regular file). A descriptor's name (/dev/fd/N) names nothing to store.
func TestSendNamedPipe(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	fifo := filepath.Join(local, "dump.tar")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dest, stored string
	}{
		{target(srv.addr, "in/"), "in/dump.tar"},
		{target(srv.addr, "in/renamed.tar"), "in/renamed.tar"},
	} {
		data := randomBytes(2<<20+5, 13)
		wrote := make(chan error, 1)
		go func() {
			// The open waits for kerf's, as a producer's would.
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err == nil {
				_, err = f.Write(data)
				f.Close()
			}
			wrote <- err
		}()
		if r := run(t, srv, local, nil, "send", fifo, tc.dest); r.code != 0 {
			t.Fatalf("send of a named pipe to %s: %s", tc.dest, r)
		}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, tc.stored)); !bytes.Equal(b, data) {
			t.Errorf("%s: stored %d bytes, not the %d written", tc.stored, len(b), len(data))
		}
	}
	// (runStdin's input reaches kerf through a pipe.)
	if r := runStdin(t, srv, []byte("x"), nil, "send", "/dev/fd/0", target(srv.addr, "in/")); r.code != 2 || !strings.Contains(r.stderr, "needs a name") {
		t.Errorf("send /dev/fd/0 into a directory: %s; want exit 2 saying it needs a name", r)
	}
	if r := runStdin(t, srv, []byte("piped"), nil, "send", "/dev/fd/0", target(srv.addr, "in/fd0.txt")); r.code != 0 {
		t.Errorf("send /dev/fd/0 under a name: %s", r)
	} else if b, _ := os.ReadFile(filepath.Join(root, "in/fd0.txt")); string(b) != "piped" {
		t.Errorf("in/fd0.txt: %q", b)
	}
}

// A file of /proc, whose size says 0, is sent whole, as a pipe is (QA:
// an empty file was stored).
func TestSendKernelFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	want, err := os.ReadFile("/proc/cpuinfo")
	if err != nil || len(want) == 0 {
		t.Fatalf("/proc/cpuinfo: %d bytes, %v", len(want), err)
	}
	root := t.TempDir()
	srv := startServer(t, root, serverOpts{})
	if r := run(t, srv, t.TempDir(), nil, "send", "/proc/cpuinfo", target(srv.addr, "sys/")); r.code != 0 {
		t.Fatalf("send /proc/cpuinfo: %s", r)
	}
	// (Its figures, such as the cores' MHz, may change between reads.)
	if b, _ := os.ReadFile(filepath.Join(root, "sys/cpuinfo")); len(b) < len(want)/2 || !bytes.HasPrefix(b, want[:bytes.IndexByte(want, '\n')+1]) {
		t.Errorf("stored %d bytes beginning %.40q, want about the %d of /proc/cpuinfo", len(b), b, len(want))
	}
}
