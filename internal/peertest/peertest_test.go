package peertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each runner is proven by real transfers over lineem: the small files of
// StandardFiles at 115200 bps, then 1 MB of random bytes at bigBaud. 1 MB
// takes 91 s of line time at 115200 bps, more than a test may take, so the
// big file runs ten times faster on the same emulated line; set
// KERF_PEERTEST_SLOW=1 to send it at 115200 too.
const (
	smallBaud = 115200
	bigSize   = 1 << 20
)

func bigBaud() int {
	if os.Getenv("KERF_PEERTEST_SLOW") == "1" {
		return smallBaud
	}
	return 1152000
}

// transferTime bounds a transfer of n bytes at baud: 3 times the line time
// (the slowest pairing, C-Kermit to G-Kermit, needs about 1.8 times) plus
// 15 s for start-up and a loaded machine.
func transferTime(n, baud int) time.Duration {
	return time.Duration(3*float64(n)/(float64(baud)/10)*float64(time.Second)) + 15*time.Second
}

func total(files []File) int {
	n := 0
	for _, f := range files {
		n += len(f.Data)
	}
	return n
}

func names(files []File) []string {
	var s []string
	for _, f := range files {
		s = append(s, f.Name)
	}
	return s
}

// pairing starts a receiver into dst and then a sender of files from src,
// both on a fresh lineem at baud, and returns them.
type pairing func(t *testing.T, devSend, devRecv, src, dst string, files []File) (sender, receiver *Peer)

func runPairing(t *testing.T, pair pairing) {
	for _, tc := range []struct {
		name  string
		files []File
		baud  int
	}{
		{"small", StandardFiles(0, 0), smallBaud},
		{"1MB", []File{{Name: "random.bin", Data: RandomBytes(bigSize, 7)}}, bigBaud()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			WriteFiles(t, src, tc.files)
			a, b := StartLineem(t, tc.baud, 0, 1)
			start := time.Now()
			sender, receiver := pair(t, a, b, src, dst, tc.files)
			limit := transferTime(total(tc.files), tc.baud)
			if err := sender.Wait(limit); err != nil {
				t.Fatalf("sender: %v", err)
			}
			if err := receiver.Wait(10 * time.Second); err != nil {
				t.Fatalf("receiver: %v", err)
			}
			elapsed := time.Since(start)
			if !CheckFiles(t, dst, tc.files) {
				t.Logf("%s\n%s", sender.Report(), receiver.Report())
			}
			n := total(tc.files)
			t.Logf("%d files, %d bytes in %v at %d bps: efficiency %.1f%%", len(tc.files), n, elapsed.Round(time.Millisecond),
				tc.baud, 100*float64(n)/(elapsed.Seconds()*float64(tc.baud)/10))
		})
	}
}

func ckSend(t *testing.T, dev, src string, files []File) *Peer {
	// One MSEND is one batch (S ... B), matching the receiver's one
	// RECEIVE; braces quote names with spaces.
	cmd := "msend"
	for _, n := range names(files) {
		cmd += " {" + n + "}"
	}
	return CKermit(t, dev, cmd, src)
}

func TestCKermitToCKermit(t *testing.T) {
	t.Parallel()
	runPairing(t, func(t *testing.T, a, b, src, dst string, files []File) (*Peer, *Peer) {
		r := CKermit(t, b, "receive", dst)
		return ckSend(t, a, src, files), r
	})
}

func TestGKermitToCKermit(t *testing.T) {
	t.Parallel()
	runPairing(t, func(t *testing.T, a, b, src, dst string, files []File) (*Peer, *Peer) {
		r := CKermit(t, b, "receive", dst)
		args := append([]string{"-i", "-P", "-s"}, names(files)...)
		return GKermitIn(t, a, src, args...), r
	})
}

func TestCKermitToGKermit(t *testing.T) {
	t.Parallel()
	runPairing(t, func(t *testing.T, a, b, src, dst string, files []File) (*Peer, *Peer) {
		r := GKermitIn(t, b, dst, "-i", "-P", "-w", "-r")
		return ckSend(t, a, src, files), r
	})
}

func TestRequirePeerFound(t *testing.T) {
	if p := RequirePeer(t, "kermit"); !filepath.IsAbs(p) {
		t.Errorf("RequirePeer(kermit) = %q, want an absolute path", p)
	}
}

func TestCKermitScriptErrorExitStatus(t *testing.T) {
	t.Parallel()
	_, b := PtyPair(t)
	p := CKermit(t, b, "send /nonexistent/file", t.TempDir())
	err := p.Wait(20 * time.Second)
	if err == nil || p.ExitCode() != ckermitScriptError {
		t.Fatalf("Wait = %v, exit code %d; want exit status %d", err, p.ExitCode(), ckermitScriptError)
	}
}

func TestWaitTimeoutKills(t *testing.T) {
	t.Parallel()
	_, b := PtyPair(t)
	p := CKermit(t, b, "receive", t.TempDir()) // waits forever for a sender
	start := time.Now()
	err := p.Wait(time.Second)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Wait = %v, want a timeout", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("Wait took %v", time.Since(start))
	}
}

func TestCKermitFailedTransferExitStatus(t *testing.T) {
	t.Parallel()
	_, b := PtyPair(t) // nobody answers on the master side
	src := t.TempDir()
	WriteFiles(t, src, StandardFiles(0, 0)[1:2])
	p := CKermit(t, b, "set send timeout 1\nset retry-limit 3\nsend allbytes.bin", src)
	err := p.Wait(40 * time.Second)
	if err == nil || p.ExitCode() != ckermitScriptError {
		t.Fatalf("Wait = %v, exit code %d; want exit status %d", err, p.ExitCode(), ckermitScriptError)
	}
	if !strings.Contains(err.Error(), "Too many retries") {
		t.Errorf("error lacks the transaction log's reason: %v", err)
	}
}

// A lock file left for the line by a C-Kermit killed earlier, naming a
// process alive now (its PID since given to another), does not keep the
// next C-Kermit from opening the line: the lock of a pty just made is
// stale by construction (CKermit clears it). Without that, SET LINE
// fails ("device in use") and the peer exits with its script error.
func TestCKermitLineLockLeftBehind(t *testing.T) {
	t.Parallel()
	_, b := PtyPair(t)
	lock := ""
	for _, dir := range []string{"/var/lock", "/run/lock"} {
		p := filepath.Join(dir, "LCK.."+filepath.Base(b))
		// In C-Kermit's form: the PID right-aligned in ten columns. PID 1
		// is alive, and not C-Kermit's parent (whose lock it would take
		// as its own).
		if err := os.WriteFile(p, fmt.Appendf(nil, "%10d\n", 1), 0o444); err == nil {
			lock = p
			break
		}
	}
	if lock == "" {
		t.Skip("no writable /var/lock or /run/lock: C-Kermit takes no line locks here")
	}
	t.Cleanup(func() { os.Remove(lock) })
	p := CKermit(t, b, "echo line-opened", t.TempDir())
	if err := p.Wait(20 * time.Second); err != nil {
		t.Fatalf("C-Kermit with a lock left for its line: %v\n%s", err, p.Report())
	}
	if !strings.Contains(p.Output(), "line-opened") {
		t.Fatalf("C-Kermit did not get past SET LINE:\n%s", p.Report())
	}
}
