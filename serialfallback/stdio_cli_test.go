package serialfallback_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"kerf/internal/peertest"
)

var (
	kerfOnce sync.Once
	kerfBin  string
	kerfErr  error
)

// kerfBinary builds the real command once per test binary.
func kerfBinary(t *testing.T) string {
	t.Helper()
	kerfOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kerf-bin-")
		if err != nil {
			kerfErr = err
			return
		}
		kerfBin = filepath.Join(dir, "kerf")
		out, err := exec.Command("go", "build", "-o", kerfBin, "kerf/cmd/kerf").CombinedOutput()
		if err != nil {
			kerfErr = err
			kerfBin = string(out)
		}
	})
	if kerfErr != nil {
		t.Fatalf("building kerf: %v\n%s", kerfErr, kerfBin)
	}
	return kerfBin
}

// kerf as the remote Kermit at a shell prompt: `kerf serial server
// --stdio` with its standard input and output on the line, and C-Kermit
// at the other end sending to it, getting from it and finishing it.
func TestStdioServerWithCKermit(t *testing.T) {
	bin := kerfBinary(t)
	files := peertest.StandardFiles(50_000, 9)
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	peertest.WriteFiles(t, root, files[:2])
	peertest.WriteFiles(t, local, files[2:])
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	line, err := os.OpenFile(b, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer line.Close()
	cmd := exec.Command(bin, "serial", "server", "--stdio", "--dir", root)
	cmd.Stdin, cmd.Stdout = line, line
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()

	script := "cd " + local + "\n" + sendList(files[2:]) + "\ncd " + back + "\nget *\nfinish"
	ck := peertest.CKermit(t, a, script, local)
	if err := ck.Wait(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kerf serial server: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("kerf serial server did not exit after FINISH\n%s", stderr.String())
	}
	peertest.CheckFiles(t, root, files)
	peertest.CheckFiles(t, back, files)
}

// Ctrl-C on the sending kerf ends both sides cleanly: the sender exits
// 130 after telling the receiver (E packet), the receiver exits with a
// transfer error naming the cancellation, and no file appears under its
// final name while the partial is kept for recovery.
func TestCtrlCCancelsCleanly(t *testing.T) {
	bin := kerfBinary(t)
	src, dst := t.TempDir(), t.TempDir()
	big := peertest.RandomBytes(2<<20, 3)
	peertest.WriteFiles(t, src, []peertest.File{{Name: "big.bin", Data: big}})
	a, b := peertest.StartLineem(t, 115200*4, 0, 1)
	recv := exec.Command(bin, "serial", "receive", "--line", b, "--speed", "460800", "--dir", dst)
	var rerr strings.Builder
	recv.Stderr = &rerr
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	defer recv.Process.Kill()
	send := exec.Command(bin, "serial", "send", "--line", a, "--speed", "460800", filepath.Join(src, "big.bin"))
	var serr strings.Builder
	send.Stderr = &serr
	if err := send.Start(); err != nil {
		t.Fatal(err)
	}
	defer send.Process.Kill()
	part := filepath.Join(dst, ".big.bin.kerf-part")
	deadline := time.Now().Add(time.Minute)
	for {
		if fi, err := os.Stat(part); err == nil && fi.Size() > 100_000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no data arrived\nsender: %s\nreceiver: %s", serr.String(), rerr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	send.Process.Signal(os.Interrupt)
	err := send.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("sender after Ctrl-C: %v, want exit status 130\n%s", err, serr.String())
	}
	err = recv.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 || !strings.Contains(rerr.String(), "canceled") {
		t.Errorf("receiver: %v, want exit status 4 and a message saying the transfer was canceled\n%s", err, rerr.String())
	}
	if _, err := os.Stat(filepath.Join(dst, "big.bin")); err == nil {
		t.Error("canceled file appeared under its final name")
	}
	if fi, err := os.Stat(part); err != nil || fi.Size() == 0 {
		t.Errorf("partial not kept for recovery: %v", err)
	}
}

// kerf as the remote Kermit on the user's own terminal (serial receive
// and server --stdio, stdin and stdout a terminal): three Ctrl-C typed
// end it with 130, as they end kermit -r (QA: raw mode passed them on
// as bytes, and kerf went on waiting). Two, or Ctrl-C among other
// bytes, do not.
func TestStdioTerminalCtrlCQuits(t *testing.T) {
	bin := kerfBinary(t)
	for _, sub := range []string{"receive", "server"} {
		t.Run(sub, func(t *testing.T) {
			master, slave := peertest.PtyPair(t)
			tty, err := os.OpenFile(slave, os.O_RDWR|syscall.O_NOCTTY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer tty.Close()
			cmd := exec.Command(bin, "serial", sub, "--stdio", "--dir", t.TempDir())
			cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			go io.Copy(io.Discard, master)     // (its NAKs)
			time.Sleep(500 * time.Millisecond) // (its raw mode set)
			master.Write([]byte("\x03\x03x\x03"))
			select {
			case err := <-done:
				t.Fatalf("kerf serial %s quit on Ctrl-C not three in a row: %v", sub, err)
			case <-time.After(time.Second):
			}
			master.Write([]byte("\x03\x03\x03"))
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 130 {
					t.Errorf("kerf serial %s after three Ctrl-C: %v, want exit 130", sub, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("kerf serial %s went on after three Ctrl-C", sub)
			}
		})
	}
}
