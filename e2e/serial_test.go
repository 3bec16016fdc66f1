package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kerf/framing"
	"kerf/internal/peertest"
)

// ptyPair starts socat joining two ptys and returns their paths.
func ptyPair(t *testing.T) (a, b string) {
	t.Helper()
	bin := peertest.RequirePeer(t, "socat")
	dir := t.TempDir()
	a, b = filepath.Join(dir, "a"), filepath.Join(dir, "b")
	cmd := exec.Command(bin, "pty,raw,echo=0,link="+a, "pty,raw,echo=0,link="+b)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, "socat's ptys", func() bool {
		_, errA := os.Stat(a)
		_, errB := os.Stat(b)
		return errA == nil && errB == nil
	})
	peertest.ClearLineLock(a)
	peertest.ClearLineLock(b)
	return a, b
}

// Two kerf peers on a serial line with different --unprefix settings
// must agree on the repeat prefix. (Regression: only the side set to
// minimal prefixing turned it off, so one side encoded runs with '~' and
// the other read '~' literally.)
func TestSerialUnprefixMismatch(t *testing.T) {
	for _, c := range []struct{ send, recv string }{{"minimal", "cautious"}, {"cautious", "minimal"}} {
		t.Run(c.send+"-to-"+c.recv, func(t *testing.T) {
			a, b := ptyPair(t)
			local, in := t.TempDir(), t.TempDir()
			data := []byte(strings.Repeat("a~~~~~~~~~~~~b", 50) + strings.Repeat("x", 300) + "~")
			writeFile(t, filepath.Join(local, "tilde.txt"), data)

			recv := startKerf(t, "serial", "receive", "--line", b, "--unprefix", c.recv, "--dir", in)
			r := run(t, nil, local, nil, "serial", "send", "--line", a, "--unprefix", c.send, "tilde.txt")
			if rerr := recv.wait(t); r.code != 0 || rerr != nil {
				t.Fatalf("send: %s\nreceive: %v\n%s", r, rerr, recv.out.String())
			}
			sameFile(t, filepath.Join(local, "tilde.txt"), filepath.Join(in, "tilde.txt"))
		})
	}
}

// bgKerf is a kerf command running beside the test (a receiver or a
// server on the other end of a line); it is killed when the test ends.
type bgKerf struct {
	out  syncBuffer // its standard output and error
	done chan error
	cmd  *exec.Cmd
}

func startKerf(t *testing.T, args ...string) *bgKerf {
	t.Helper()
	k := &bgKerf{done: make(chan error, 1)}
	cmd := exec.Command(kerfBin, args...)
	k.cmd = cmd
	cmd.Stdout, cmd.Stderr = &k.out, &k.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	go func() { k.done <- cmd.Wait() }()
	return k
}

// wait returns how the command ended; one that does not end within the
// safety timeout fails the test.
func (k *bgKerf) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-k.done:
		return err
	case <-time.After(commandTimeout):
		t.Fatalf("kerf did not finish:\n%s", k.out.String())
		return nil
	}
}

// kerf and C-Kermit keep out of a line the other has open, by the UUCP
// lock file (LCK..NAME in /var/lock) both take: two programs reading one
// line would each get half of the other's packets.
func TestSerialLineLockWithCKermit(t *testing.T) {
	a, _ := ptyPair(t)
	target, err := filepath.EvalSymlinks(a)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join("/var/lock", "LCK.."+filepath.Base(target))

	// kerf holds the line: C-Kermit's SET LINE fails.
	recv := startKerf(t, "serial", "receive", "--line", a, "--dir", t.TempDir())
	want := fmt.Sprintf("%10d\n", recv.cmd.Process.Pid)
	waitFor(t, "kerf's lock "+lock, func() bool {
		b, _ := os.ReadFile(lock)
		return string(b) == want
	})
	ck := peertest.CKermitKeepingLocks(t, a, "echo line-opened", t.TempDir())
	ck.Wait(commandTimeout)
	if ck.ExitCode() == 0 || strings.Contains(ck.Output(), "line-opened") ||
		!strings.Contains(ck.Output(), fmt.Sprintf("Locked by process %d", recv.cmd.Process.Pid)) {
		t.Fatalf("C-Kermit opened a line kerf holds (exit %d):\n%s", ck.ExitCode(), ck.Report())
	}
	recv.cmd.Process.Signal(syscall.SIGTERM)
	recv.wait(t)
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kerf stopped by SIGTERM left its lock: %v", err)
	}

	// C-Kermit holds the line: kerf refuses it, naming C-Kermit.
	local := t.TempDir()
	writeFile(t, filepath.Join(local, "f"), []byte("data"))
	ck = peertest.CKermit(t, a, "sleep 60", t.TempDir())
	// Its output is buffered until it exits: its lock says it has the line.
	ckLock := fmt.Sprintf("%10d\n", ck.Pid())
	waitFor(t, "C-Kermit's lock "+lock, func() bool {
		b, _ := os.ReadFile(lock)
		return string(b) == ckLock
	})
	r := run(t, nil, local, nil, "serial", "send", "--line", a, "f")
	if r.code != 3 || !strings.Contains(r.stderr, fmt.Sprintf("locked by process %d", ck.Pid())) || !strings.Contains(r.stderr, lock) {
		t.Fatalf("send on C-Kermit's line: %s\nwant exit 3 naming process %d and %s", r, ck.Pid(), lock)
	}
	if b, _ := os.ReadFile(lock); string(b) != ckLock {
		t.Errorf("C-Kermit's lock became %q", b)
	}
}

// The same transfer with equal settings works (the control case).
func TestSerialKerfToKerf(t *testing.T) {
	a, b := ptyPair(t)
	local, in := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "r.bin"), randomBytes(200000, 31))
	recv := startKerf(t, "serial", "receive", "--line", b, "--dir", in)
	r := run(t, nil, local, nil, "serial", "send", "--line", a, "r.bin")
	if r.code != 0 {
		t.Fatalf("send: %s\nreceive:\n%s", r, recv.out.String())
	}
	if err := recv.wait(t); err != nil {
		t.Fatalf("receive: %v\n%s", err, recv.out.String())
	}
	sameFile(t, filepath.Join(local, "r.bin"), filepath.Join(in, "r.bin"))
}

// Both ends at --start-of-packet 2: the data, full of Ctrl-B, arrives
// whole (the mark is prefixed in packets, which are read by it); a
// receiver left at the default mark hears nothing it can read.
func TestSerialKerfToKerfStartOfPacket(t *testing.T) {
	a, b := ptyPair(t)
	local, in := t.TempDir(), t.TempDir()
	data := randomBytes(200000, 32)
	for i := 0; i < len(data); i += 97 {
		data[i] = 2
	}
	writeFile(t, filepath.Join(local, "r.bin"), data)
	recv := startKerf(t, "serial", "receive", "--line", b, "--start-of-packet", "2", "--dir", in)
	r := run(t, nil, local, nil, "serial", "send", "--line", a, "--start-of-packet", "2", "r.bin")
	if r.code != 0 {
		t.Fatalf("send: %s\nreceive:\n%s", r, recv.out.String())
	}
	if err := recv.wait(t); err != nil {
		t.Fatalf("receive: %v\n%s", err, recv.out.String())
	}
	sameFile(t, filepath.Join(local, "r.bin"), filepath.Join(in, "r.bin"))

	a, b = ptyPair(t)
	recv = startKerf(t, "serial", "receive", "--line", b, "--timeout", "300ms", "--retries", "3", "--dir", t.TempDir())
	r = run(t, nil, local, nil, "serial", "send", "--line", a, "--start-of-packet", "2", "--timeout", "300ms", "--retries", "3", "r.bin")
	if r.code == 0 {
		t.Fatalf("send at mark 2 to a receiver at mark 1 succeeded: %s", r)
	}
	recv.wait(t)
}

// kerf serial get fetches from a C-Kermit server, then finish ends its
// server mode: C-Kermit goes on with its script (and exits).
func TestSerialFinishCKermitServer(t *testing.T) {
	a, b := ptyPair(t)
	srv, local := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(srv, "s.bin"), randomBytes(50000, 32))
	ck := peertest.CKermit(t, b, "cd "+srv+"\nserver", srv)
	r := run(t, nil, local, nil, "serial", "get", "--line", a, "--dir", local, "s.bin")
	if r.code != 0 {
		t.Fatalf("get: %s\n%s", r, ck.Report())
	}
	sameFile(t, filepath.Join(srv, "s.bin"), filepath.Join(local, "s.bin"))
	if r := run(t, nil, local, nil, "serial", "finish", "--line", a); r.code != 0 {
		t.Fatalf("finish: %s", r)
	}
	// Still in server mode, C-Kermit would never get to its exit.
	if err := ck.Wait(30 * time.Second); err != nil {
		t.Fatalf("C-Kermit after finish: %v", err)
	}
}

// kerf serial bye ends a kerf serial server, which exits. (C-Kermit
// answers BYE only after "enable bye", and then logs out its parent
// process: SIGHUP, which a test cannot be.)
func TestSerialByeKerfServer(t *testing.T) {
	a, b := ptyPair(t)
	srv, local := t.TempDir(), t.TempDir()
	server := startKerf(t, "serial", "server", "--line", b, "--dir", srv)
	if r := run(t, nil, local, nil, "serial", "bye", "--line", a); r.code != 0 {
		t.Fatalf("bye: %s\nserver:\n%s", r, server.out.String())
	}
	if err := server.wait(t); err != nil {
		t.Fatalf("server after bye: %v\n%s", err, server.out.String())
	}
}

// A receiver whose sender goes silent after its Send-Init gives up after
// --retries timeouts of the sender's own timeout (the S packet's TIME,
// here 1 second), reporting why; and --retries out of range is a usage
// error.
func TestSerialReceiveRetriesWhenSenderGoes(t *testing.T) {
	a, b := ptyPair(t)
	in := t.TempDir()
	recv := startKerf(t, "serial", "receive", "--line", b, "--dir", in, "--retries", "2")
	line, err := os.OpenFile(a, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer line.Close()
	// S, sequence 0, type-1 check: MAXL 94, TIME 1 s, no padding, CR,
	// '#' and 'Y' prefixes, check type 1; then nothing more.
	s, err := framing.Frame{Mark: framing.SOH, Check: 1}.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'S', Data: []byte("~! @-#Y1")})
	if err != nil {
		t.Fatal(err)
	}
	// Again until the receiver answers it: it empties the line as it
	// opens it, and an S written before went with what it found there.
	answered := false
	buf := make([]byte, 256)
	for try := 0; try < 20 && !answered; try++ {
		if _, err := line.Write(append(s, '\r')); err != nil {
			t.Fatal(err)
		}
		line.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		n, _ := line.Read(buf)
		answered = bytes.Contains(buf[:n], []byte{framing.SOH})
	}
	if !answered {
		t.Fatalf("the receiver never answered the S:\n%s", recv.out.String())
	}
	err = recv.wait(t)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Fatalf("receive ended with %v, want exit code 4:\n%s", err, recv.out.String())
	}
	if out := recv.out.String(); !strings.Contains(out, "too many retries") || !strings.Contains(out, "3 timeouts") {
		t.Errorf("receive's error does not say it gave up after 2 retries (3 timeouts):\n%s", out)
	}
	r := run(t, nil, in, nil, "serial", "receive", "--line", b, "--retries", "0")
	if r.code != 2 || !strings.Contains(r.stderr, "--retries") {
		t.Errorf("--retries 0: %s; want usage error naming --retries", r)
	}
}

// kerf serial's default --parity auto gets a file from a C-Kermit server
// whose line uses even parity, with no parity option given.
func TestSerialParityAutoCKermitServer(t *testing.T) {
	a, b := ptyPair(t)
	srv, local := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(srv, "p.bin"), randomBytes(30000, 33))
	ck := peertest.CKermit(t, b, "set parity even\ncd "+srv+"\nserver", srv)
	r := run(t, nil, local, []string{"--log-level", "info"}, "serial", "get", "--line", a, "--dir", local, "p.bin")
	if r.code != 0 {
		t.Fatalf("get: %s\n%s", r, ck.Report())
	}
	sameFile(t, filepath.Join(srv, "p.bin"), filepath.Join(local, "p.bin"))
	if !strings.Contains(r.stderr, "parity=even") {
		t.Errorf("kerf did not log that it follows even parity:\n%s", r.stderr)
	}
	if r := run(t, nil, local, nil, "serial", "finish", "--line", a); r.code != 0 {
		t.Fatalf("finish: %s", r)
	}
	if err := ck.Wait(30 * time.Second); err != nil {
		t.Fatalf("C-Kermit after finish: %v", err)
	}
	// --parity none turns the detection off: the same get fails.
	ck = peertest.CKermit(t, b, "set parity even\ncd "+srv+"\nserver", srv)
	if r := run(t, nil, local, nil, "serial", "get", "--parity", "none", "--retries", "2", "--timeout", "1s", "--line", a, "--dir", t.TempDir(), "p.bin"); r.code == 0 || !strings.Contains(r.stderr, "too many retries") {
		t.Errorf("get with --parity none from an even-parity server: %s; want it to give up unheard", r)
	}
}

// An E packet left on the line by a receiver that gave up earlier is not
// the answer to the next sender's Send-Init: the sender discards what
// the line holds when it opens it, as C-Kermit does. (It failed with
// the old E's text, and the new receiver waited for nothing.)
func TestSerialSendIgnoresStaleErrorPacket(t *testing.T) {
	a, b := ptyPair(t)
	local, in := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "one"), randomBytes(5000, 5))
	// The leftover: what a receiver on b that gave up wrote to a.
	f := framing.Frame{Mark: framing.SOH, Check: 1}
	stale, err := f.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'E', Data: []byte("too many retries")})
	if err != nil {
		t.Fatal(err)
	}
	lb, err := os.OpenFile(b, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	lb.Write(append(stale, '\r'))
	lb.Close()
	time.Sleep(200 * time.Millisecond) // through socat, into a's input
	recv := startKerf(t, "serial", "receive", "--line", b, "--dir", in)
	r := run(t, nil, local, nil, "serial", "send", "--line", a, "one")
	if r.code != 0 {
		t.Fatalf("send after a stale E: %s", r)
	}
	if err := recv.wait(t); err != nil {
		t.Errorf("receive: %v:\n%s", err, recv.out.String())
	}
	sameFile(t, filepath.Join(local, "one"), filepath.Join(in, "one"))
}

// The same for a receiver: the E of a sender that gave up, left on the
// line, is not taken for the next sender's (QA af: the receiver exited
// at once with the old sender's message, and the real sender then
// retried for 100 s). The receiver discards what the line holds when it
// opens it, as C-Kermit's RECEIVE does.
func TestSerialReceiveIgnoresStaleErrorPacket(t *testing.T) {
	a, b := ptyPair(t)
	local, in := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "one"), randomBytes(5000, 6))
	// The leftover: what a sender on a that gave up wrote to b, its
	// Send-Init tries and its E.
	f := framing.Frame{Mark: framing.SOH, Check: 1}
	var stale []byte
	for _, p := range []framing.Packet{
		{Seq: 0, Type: 'S', Data: framing.DefaultParams().Marshal()},
		{Seq: 0, Type: 'S', Data: framing.DefaultParams().Marshal()},
		{Seq: 0, Type: 'E', Data: []byte("too many retries")},
	} {
		var err error
		if stale, err = f.AppendPacket(stale, p); err != nil {
			t.Fatal(err)
		}
		stale = append(stale, '\r')
	}
	// b held open meanwhile, as a line is: a pty whose other end no one
	// holds drops what comes to it.
	hold, err := os.OpenFile(b, os.O_WRONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	la, err := os.OpenFile(a, os.O_WRONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	la.Write(stale)
	la.Close()
	time.Sleep(200 * time.Millisecond) // through socat, into b's input
	recv := startKerf(t, "serial", "receive", "--line", b, "--dir", in)
	time.Sleep(300 * time.Millisecond) // (the receiver reads its line first)
	hold.Close()
	r := run(t, nil, local, nil, "serial", "send", "--line", a, "one")
	if r.code != 0 {
		t.Fatalf("send after a stale E at the receiver: %s", r)
	}
	if err := recv.wait(t); err != nil {
		t.Errorf("receive: %v:\n%s", err, recv.out.String())
	}
	sameFile(t, filepath.Join(local, "one"), filepath.Join(in, "one"))
}

// A tree sent to G-Kermit, which makes no directories: the refusal of
// the first name in a missing directory says so and what to do (QA:
// only G-Kermit's own "Write access denied"); with the directories made
// there first, the same send goes.
func TestSerialTreeToGKermitWithoutItsDirectories(t *testing.T) {
	gk := peertest.RequirePeer(t, "gkermit")
	local, dst := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "t/a/x.bin"), randomBytes(3000, 61))
	writeFile(t, filepath.Join(local, "t/y.bin"), randomBytes(2000, 62))
	r := run(t, nil, dst, nil, "serial", "send", "-r", "--command", gk+" -r", filepath.Join(local, "t"))
	if r.code != 4 || !strings.Contains(r.stderr, "Write access denied") || !strings.Contains(r.stderr, "makes no directories") || !strings.Contains(r.stderr, "needs t/a there first") {
		t.Fatalf("send -r to G-Kermit without t/a there: %s; want exit 4 with the hint", r)
	}
	if err := os.MkdirAll(filepath.Join(dst, "t/a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := run(t, nil, dst, nil, "serial", "send", "-r", "--command", gk+" -r", filepath.Join(local, "t")); r.code != 0 {
		t.Fatalf("send -r to G-Kermit with t/a there: %s", r)
	}
	for _, f := range []string{"t/a/x.bin", "t/y.bin"} {
		sameFile(t, filepath.Join(local, f), filepath.Join(dst, f))
	}
}

// A resumed send to a Kermit that cannot resume (G-Kermit has no
// RESEND) says the files went whole (QA an: nothing said so).
func TestSerialResumeToGKermitSaysWhole(t *testing.T) {
	gk := peertest.RequirePeer(t, "gkermit")
	local, dst := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "a.bin"), randomBytes(3000, 63))
	r := run(t, nil, dst, nil, "serial", "send", "--resume", "--command", gk+" -i -r", filepath.Join(local, "a.bin"))
	if r.code != 0 || !strings.Contains(r.stderr, "cannot resume") {
		t.Fatalf("send --resume to G-Kermit: %s; want it said that files went whole", r)
	}
	if r := run(t, nil, dst, nil, "serial", "send", "--command", gk+" -i -r", filepath.Join(local, "a.bin")); strings.Contains(r.stderr, "cannot resume") {
		t.Errorf("a send without --resume speaks of resuming: %s", r)
	}
}

// A serial send with nothing answering on the line (no peer, or one at
// another speed) gives up as a client that reaches no server does:
// exit 3, saying no answer came (QA ak: exit 4, a transfer's failure).
// A peer heard once and then silent stays exit 4
// (TestSerialReceiveRetriesWhenSenderGoes).
func TestSerialNoAnswerIsExit3(t *testing.T) {
	a, _ := ptyPair(t)
	local := t.TempDir()
	writeFile(t, filepath.Join(local, "f.txt"), []byte("f"))
	r := run(t, nil, local, nil, "serial", "send", "--line", a, "--retries", "2", "--timeout", "1s", "f.txt")
	if r.code != 3 || !strings.Contains(r.stderr, "no answer from the peer") {
		t.Errorf("serial send to nobody: %s; want exit 3, no answer", r)
	}
	// A command that ends before its peer said anything (ssh that
	// cannot reach its host, a program not there) is a peer never
	// heard too (QA ao: exit 4).
	for _, c := range []struct {
		command string
		code    int
	}{
		{"exit 255", 3},
		{"nosuchprogram-kerf-test -r", 3},
	} {
		r := run(t, nil, local, nil, "serial", "send", "--command", c.command, "f.txt")
		if r.code != c.code {
			t.Errorf("serial send --command %q: %s; want exit %d", c.command, r, c.code)
		}
	}
}
