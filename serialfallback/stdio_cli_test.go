package serialfallback_test

import (
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
