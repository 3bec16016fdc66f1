package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// waitFor polls cond every 5 ms until it holds or the safety timeout
// passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(commandTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitStable waits until p's size has stopped changing (the server has
// finished writing what it received before the client died).
func waitStable(t *testing.T, p string) int64 {
	t.Helper()
	last := int64(-2)
	for i := 0; ; i++ {
		n := fileSize(p)
		if n == last {
			return n
		}
		last = n
		if i > 200 {
			t.Fatalf("%s keeps changing size", p)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The client is killed mid-file; `send --resume` then sends only the
// rest, and the file is identical.
func TestResumeAfterClientKilled(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, false)
	const size = 24 << 20
	src := filepath.Join(local, "big.bin")
	writeFile(t, src, randomBytes(size, 7))
	dst := filepath.Join(root, "big.bin")
	part := partName(dst)

	// Slow the data connection so the kill lands mid-file.
	fs.data.rateUp.Store(16 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := kerfCmd(t, ctx, fs.server, local, []string{"--json"}, "send", "big.bin", fs.addr())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the partial file to pass 4 MiB", func() bool { return fileSize(part) >= 4<<20 })
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	fs.data.rateUp.Store(0)

	kept := waitStable(t, part)
	if kept <= 0 || kept >= size {
		t.Fatalf("partial file holds %d bytes, want some but not all of %d", kept, size)
	}
	noFile(t, dst)
	// The kept part is a true prefix.
	got, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(src)
	if !bytes.Equal(got, want[:len(got)]) {
		t.Fatalf("the kept partial file is not a prefix of the source")
	}

	upBefore := fs.data.upBytes.Load()
	r := mustRun(t, fs.server, local, []string{"--json"}, "send", "--resume", "big.bin", fs.addr())
	d := checkDoneEvent(t, r, "big.bin", size, kept)
	checkCRC(t, d, src) // the whole file's, not the rest's
	if d.Offset != kept || d.Bytes != size-kept {
		t.Errorf("resumed at %d sending %d bytes, want %d and %d", d.Offset, d.Bytes, kept, size-kept)
	}
	// What crossed the data connection is the rest, plus frame (and TLS)
	// overhead.
	moved := fs.data.upBytes.Load() - upBefore
	if moved < size-kept || moved > (size-kept)*101/100+64<<10 {
		t.Errorf("%d bytes crossed the data connection for a %d-byte rest", moved, size-kept)
	}
	sameFile(t, src, dst)
	noFile(t, part)
}

// A client cut off mid-file (its link gone, no reset: the server's
// session sits on a dead connection) is run again with --resume: its new
// session takes the partial over from the old, silent one, rather than
// being refused "busy" until the old one's idle timeout, and resumes it.
// Also when the client was cut off while it resumed the file (a flaky
// link's second cut): the old session, whose peer checked its copy and
// then sent data, is silent, not busy with a check (review of the
// take-over: it counted as busy for a minute and more).
func TestResumeTakesOverACutOffSession(t *testing.T) {
	for _, c := range []struct {
		name         string
		keptBefore   int64 // a partial an earlier run left, resumed by the first run
		cutPast      int64
		resumeSecond bool
	}{
		{"cut while sending", 0, 4 << 20, false},
		{"cut while resuming", 2 << 20, 6 << 20, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, local := t.TempDir(), t.TempDir()
			fs := startFaultServer(t, root, false, "--take-over-after", "1s")
			const size = 24 << 20
			src := filepath.Join(local, "big.bin")
			data := randomBytes(size, 17)
			writeFile(t, src, data)
			dst := filepath.Join(root, "big.bin")
			part := partName(dst)
			if c.keptBefore > 0 {
				writeFile(t, part, data[:c.keptBefore])
			}

			fs.data.rateUp.Store(8 << 20)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Two data connections, as to another host (loopback
			// gets one by default): their blocks land out of order.
			args := []string{"--streams", "2", "big.bin", fs.addr()}
			if c.resumeSecond {
				args = append([]string{"--resume"}, args...)
			}
			cmd := kerfCmd(t, ctx, fs.server, local, nil, "send", args...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the partial file to grow", func() bool { return fileSize(part) >= c.cutPast })
			fs.ctl.frozen.Store(true)
			fs.data.frozen.Store(true)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			kept := waitStable(t, part)

			// Straight to the server, past the frozen proxies.
			r := mustRun(t, fs.server, local, []string{"--json"}, "send", "--resume", "big.bin", fs.server.addr)
			// The partial's first hole, where it resumes, may lie below its
			// size: blocks of two streams land out of order.
			var offset int64
			if done := eventsNamed(parseEvents(t, r.stdout), "file_done"); len(done) == 1 {
				offset = done[0].Offset
			}
			if offset < max(c.keptBefore, 1) || offset > kept {
				t.Errorf("the new session resumed at %d, want a point in the %d bytes kept (at least %d)", offset, kept, c.keptBefore)
			}
			checkCRC(t, checkDoneEvent(t, r, "big.bin", size, offset), src)
			sameFile(t, src, dst)
			noFile(t, part)
			waitLogLine(t, fs.server, "session taken over")
		})
	}
}

// A session whose link pauses (TCP rides the outage out) is not taken
// over by a second sender of the same file while it is silent for less
// than --take-over-after: the second sender sees it move again and is
// refused "busy", and the first, alive throughout, finishes.
func TestPausedSessionIsNotTakenOver(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, false, "--take-over-after", "4s")
	const size = 32 << 20
	src := filepath.Join(local, "big.bin")
	writeFile(t, src, randomBytes(size, 19))
	dst := filepath.Join(root, "big.bin")
	// Slow enough that the first send is still going when the second,
	// started on a loaded machine, gets to its file (it would otherwise
	// find it whole and exit 0).
	fs.data.rateUp.Store(4 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := kerfCmd(t, ctx, fs.server, local, nil, "send", "big.bin", fs.addr())
	var firstOut bytes.Buffer
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the partial file to pass 4 MiB", func() bool { return fileSize(partName(dst)) >= 4<<20 })
	fs.ctl.paused.Store(true)
	fs.data.paused.Store(true)
	time.AfterFunc(2*time.Second, func() {
		fs.ctl.paused.Store(false)
		fs.data.paused.Store(false)
	})
	second := run(t, fs.server, local, nil, "send", "--resume", "big.bin", fs.server.addr)
	if second.code == 0 || !strings.Contains(second.stderr, "being received by another transfer") {
		t.Errorf("the second sender: %s; want it refused, the file being received by another transfer", second)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("the first sender, alive throughout a 2 s pause, failed: %v\n%s", err, firstOut.String())
	}
	sameFile(t, src, dst)
	if strings.Contains(fs.server.stderr.String(), "session taken over") {
		t.Errorf("a session was taken over")
	}
}

// A partial file that is not a prefix of the file being resumed is
// discarded and the whole file sent.
func TestResumeDifferentPartialRestarts(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	src := filepath.Join(local, "f.bin")
	writeFile(t, src, randomBytes(1<<20, 9))
	writeFile(t, partName(filepath.Join(root, "f.bin")), randomBytes(300000, 10))
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--resume", "f.bin", srv.addr)
	checkDoneEvent(t, r, "f.bin", 1<<20, 0)
	sameFile(t, src, filepath.Join(root, "f.bin"))
	noFile(t, partName(filepath.Join(root, "f.bin")))

	// And fetching: the receiving client reports no failure for the
	// discarded attempt (it said "transfer canceled" and exited 4, the
	// file received whole all the same).
	back := t.TempDir()
	writeFile(t, partName(filepath.Join(back, "f.bin")), randomBytes(300000, 11))
	r = mustRun(t, srv, back, []string{"--json"}, "get", "--resume", target(srv.addr, "f.bin"), ".")
	checkDoneEvent(t, r, "f.bin", 1<<20, 0)
	sameFile(t, src, filepath.Join(back, "f.bin"))
	noFile(t, partName(filepath.Join(back, "f.bin")))
}

// One bit flipped in one block's payload on the wire: the receiver asks
// for the block again and the file arrives identical. Both directions.
func TestCorruptedBlockIsResent(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, true)
	const size = 2<<20 + 999
	src := filepath.Join(local, "c.bin")
	writeFile(t, src, randomBytes(size, 11))

	fs.data.corruptUp.Store(1)
	mustRun(t, fs.server, local, nil, "send", "c.bin", fs.addr())
	sameFile(t, src, filepath.Join(root, "c.bin"))
	blocks, resends, corrupted := fs.data.stats()
	if len(corrupted) != 1 {
		t.Fatalf("the proxy damaged %d blocks (are the data frames encrypted?)", len(corrupted))
	}
	if resends != 1 || blocks[corrupted[0]] != 2 {
		t.Errorf("damaged block %+v: %d resend requests, block sent %d times; want 1 and 2", corrupted[0], resends, blocks[corrupted[0]])
	}

	fs.data.corruptDn.Store(1)
	mustRun(t, fs.server, back, nil, "get", target(fs.addr(), "c.bin"), ".")
	sameFile(t, src, filepath.Join(back, "c.bin"))
	blocks, resends, corrupted = fs.data.stats()
	if len(corrupted) != 2 || corrupted[1].up {
		t.Fatalf("damaged blocks %+v, want one each way", corrupted)
	}
	if resends != 2 || blocks[corrupted[1]] != 2 {
		t.Errorf("damaged block %+v: %d resend requests in all, block sent %d times; want 2 and 2", corrupted[1], resends, blocks[corrupted[1]])
	}
}

// The data connection dies mid-file, and the client does not dial again
// (--reconnect 0; TestLostConnectionIsRedialled has it dial): the client
// says so and fails with exit 4, the server keeps the partial file for a
// resume and never puts anything under the final name; the resume then
// completes the file.
// The client's --json names the file that failed, and the server's
// xferlog has a line for the failed transfer and then the complete one.
func TestDataConnectionDropped(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	xferlog := filepath.Join(t.TempDir(), "xferlog")
	fs := startFaultServer(t, root, false, "--xferlog", xferlog)
	const size = 16 << 20
	src := filepath.Join(local, "d.bin")
	writeFile(t, src, randomBytes(size, 12))
	dst := filepath.Join(root, "d.bin")

	// One data connection, so that the cut point is a point in the file
	// (with several, see TestGetResumeTwoStreamsKeepsOnlyAPrefix).
	fs.data.cutAfter.Store(5 << 20)
	r := run(t, fs.server, local, []string{"--json"}, "send", "--reconnect", "0", "--streams", "1", "d.bin", fs.addr())
	if r.code != 4 || !strings.Contains(r.stderr, "data connection") {
		t.Fatalf("want exit 4 and an error about the data connection, got %s", r)
	}
	if fs.data.cuts.Load() == 0 {
		t.Fatalf("the proxy never cut the connection")
	}
	evs := parseEvents(t, r.stdout)
	if len(evs) == 0 || evs[len(evs)-1].Event != "error" || !strings.Contains(evs[len(evs)-1].Error, "data connection") {
		t.Errorf("--json should end with an error event about the data connection:\n%s", r.stdout)
	}
	if len(eventsNamed(evs, "file_done")) != 0 {
		t.Errorf("a file_done event for a failed file:\n%s", r.stdout)
	}
	if fe := eventsNamed(evs, "file_error"); len(fe) != 1 || fe[0].Name != "d.bin" {
		t.Errorf("want one file_error event for d.bin:\n%s", r.stdout)
	}
	noFile(t, dst)
	kept := waitStable(t, partName(dst))
	waitFor(t, "the xferlog line of the failed transfer", func() bool {
		b, _ := os.ReadFile(xferlog)
		return strings.Contains(string(b), " /d.bin b _ i r ")
	})
	if b, _ := os.ReadFile(xferlog); !strings.HasSuffix(string(b), " i\n") || strings.Count(string(b), "\n") != 1 {
		t.Errorf("xferlog after the failure: want one incomplete line:\n%s", b)
	}
	if kept <= 0 {
		t.Fatalf("no partial file kept (size %d)", kept)
	}

	fs.data.cutAfter.Store(0)
	r = mustRun(t, fs.server, local, []string{"--json"}, "send", "--resume", "d.bin", fs.addr())
	d := checkDoneEvent(t, r, "d.bin", size, kept)
	if d.Offset == 0 {
		t.Errorf("the resume sent the whole file again")
	}
	sameFile(t, src, dst)
	waitFor(t, "the xferlog line of the resumed transfer", func() bool {
		b, _ := os.ReadFile(xferlog)
		return strings.Count(string(b), "\n") == 2
	})
	if b, _ := os.ReadFile(xferlog); !strings.Contains(string(b), fmt.Sprintf(" %d /d.bin b _ i r ", size-kept)) || !strings.HasSuffix(string(b), " c\n") {
		t.Errorf("xferlog after the resume: want a complete line of %d bytes:\n%s", size-kept, b)
	}
}

// The xferlog names files by their path in the served tree (not the
// client's bare name), in both directions, and logs a received file
// once it is under its final name.
func TestXferLogPaths(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	xferlog := filepath.Join(t.TempDir(), "xferlog")
	srv := startServer(t, root, serverOpts{args: []string{"--xferlog", xferlog}})
	writeFile(t, filepath.Join(local, "tree/a.txt"), []byte("aaa"))
	writeFile(t, filepath.Join(local, "tree/sub/b.txt"), []byte("bb"))
	mustRun(t, srv, local, nil, "send", "-r", "tree", target(srv.addr, "deep/er"))
	mustRun(t, srv, t.TempDir(), nil, "get", target(srv.addr, "deep/er/tree/sub/b.txt"), ".")
	want := []string{
		" 3 /deep/er/tree/a.txt b _ i r ",
		" 2 /deep/er/tree/sub/b.txt b _ i r ",
		" 2 /deep/er/tree/sub/b.txt b _ o r ",
	}
	waitFor(t, "three xferlog lines", func() bool {
		b, _ := os.ReadFile(xferlog)
		return strings.Count(string(b), "\n") == len(want)
	})
	b, _ := os.ReadFile(xferlog)
	for _, w := range want {
		if !strings.Contains(string(b), w) {
			t.Errorf("xferlog has no line with %q:\n%s", w, b)
		}
	}
	if strings.Count(string(b), " c\n") != len(want) {
		t.Errorf("want every line complete:\n%s", b)
	}
}

// GET side: the data connection dies while the server sends; the client
// keeps its partial file, `get --resume` (REGET) fetches only the rest.
func TestGetResumeAfterDataConnectionDropped(t *testing.T) {
	t.Run("cut as blocks come", func(t *testing.T) { testGetResumeAfterDrop(t, 0) })
	// The control connection slow: the file's blocks are cut off before
	// its A reaches the client, all of them in the park.
	t.Run("cut before the file is taken", func(t *testing.T) { testGetResumeAfterDrop(t, 300*time.Millisecond) })
}

func testGetResumeAfterDrop(t *testing.T, ctlDelay time.Duration) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, false)
	fs.ctl.delayDown.Store(int64(ctlDelay))
	const size = 12 << 20
	src := filepath.Join(root, "g.bin")
	writeFile(t, src, randomBytes(size, 13))
	dst := filepath.Join(local, "g.bin")

	// One data connection: blocks arrive in order, so the kept partial
	// is everything that arrived (with several, see the next test).
	// Blocks that come before the client has taken the file (its A's
	// answer) wait in the data path's park, and are kept too (CI: a cut
	// then kept nothing).
	fs.data.cutDown.Store(3 << 20)
	r := run(t, fs.server, local, []string{"--json"}, "get", "--reconnect", "0", "--streams", "1", target(fs.addr(), "g.bin"), ".")
	if r.code != 4 || !strings.Contains(r.stderr, "data connection") {
		t.Fatalf("want exit 4 and an error about the data connection, got %s", r)
	}
	noFile(t, dst)
	kept := fileSize(partName(dst))
	if kept <= 0 || kept >= size {
		t.Fatalf("client kept %d bytes of %d", kept, size)
	}
	// Said to be kept for --resume, as a send says (QA: a get said only
	// what cut it off).
	if fe := eventsNamed(parseEvents(t, r.stdout), "file_error"); len(fe) != 1 || !strings.Contains(fe[0].Error, "kept for --resume") {
		t.Errorf("want one file_error for g.bin saying what came is kept for --resume:\n%s", r.stdout)
	}

	fs.data.cutDown.Store(0)
	fs.ctl.delayDown.Store(0)
	down := fs.data.downBytes.Load()
	r = mustRun(t, fs.server, local, []string{"--json"}, "get", "--streams", "1", "--resume", target(fs.addr(), "g.bin"), ".")
	checkDoneEvent(t, r, "g.bin", size, kept)
	if moved := fs.data.downBytes.Load() - down; moved < size-kept || moved > (size-kept)*101/100+64<<10 {
		t.Errorf("%d bytes crossed the data connection for a %d-byte rest", moved, size-kept)
	}
	sameFile(t, src, dst)
	noFile(t, partName(dst))
}

// A partial file that already holds the whole file: the resume moves no
// bytes and completes it.
func TestResumeOfCompletePartial(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	data := randomBytes(700000, 14)
	src := filepath.Join(local, "full.bin")
	writeFile(t, src, data)
	writeFile(t, partName(filepath.Join(root, "full.bin")), data)
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--resume", "full.bin", srv.addr)
	checkDoneEvent(t, r, "full.bin", int64(len(data)), int64(len(data)))
	sameFile(t, src, filepath.Join(root, "full.bin"))
	noFile(t, partName(filepath.Join(root, "full.bin")))
}

// signalMidFile sends a 16 MiB file through a slowed data connection
// and sends sig to the server once the partial has grown; it returns
// the client's exit code and output, and checks what a server that
// went away mid-file must leave: a partial for a resume, nothing under
// the final name.
func signalMidFile(t *testing.T, sig syscall.Signal) (int, string) {
	t.Helper()
	m := startSendMidFile(t)
	m.fs.cmd.Process.Signal(sig)
	m.cmd.Wait()
	if m.ctx.Err() != nil {
		t.Fatalf("the client hung after the server went away:\n%s", m.out.String())
	}
	noFile(t, filepath.Join(m.root, "k.bin"))
	if fileSize(m.part) <= 0 {
		t.Errorf("the server's partial file is gone")
	}
	return m.cmd.ProcessState.ExitCode(), m.out.String()
}

// midFile is a client sending a 16 MiB file through a slowed proxy to a
// server, with the file's first block already in the server's partial.
type midFile struct {
	fs         *faultServer
	cmd        *exec.Cmd
	out        *bytes.Buffer // the client's stdout and stderr
	part, root string
	ctx        context.Context
}

func startSendMidFile(t *testing.T, serveArgs ...string) midFile {
	t.Helper()
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, false, serveArgs...)
	data := randomBytes(16<<20, 15)
	writeFile(t, filepath.Join(local, "k.bin"), data)
	part := partName(filepath.Join(root, "k.bin"))
	fs.data.rateUp.Store(8 << 20)
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	t.Cleanup(cancel)
	// (Not dialling again: these tests see how a lost server ends a
	// transfer; reconnect_test.go dials.)
	cmd := kerfCmd(t, ctx, fs.server, local, nil, "send", "--reconnect", "0", "--streams", "2", "k.bin", fs.addr())
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first block written, not merely the file grown: blocks come
	// on two streams, and a receiver that stops keeps only what is whole
	// from the start (a second block alone leaves an empty partial).
	waitFor(t, "the partial file's first block", func() bool { return hasPrefix(part, data[:1<<20]) })
	return midFile{fs: fs, cmd: cmd, out: out, part: part, root: root, ctx: ctx}
}

// hasPrefix reports whether file p begins with want.
func hasPrefix(p string, want []byte) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	got := make([]byte, len(want))
	_, err = io.ReadFull(f, got)
	return err == nil && bytes.Equal(got, want)
}

// The server dies mid-file: the client fails with exit 4 and a message,
// and the server's partial is left for a resume, never the final name.
func TestServerKilledMidFile(t *testing.T) {
	if code, out := signalMidFile(t, syscall.SIGKILL); code != 4 || !strings.Contains(out, "kerf:") {
		t.Fatalf("want exit 4 with a message, got %d:\n%s", code, out)
	}
}

// Two clients send different files under the same name at the same time.
// The result must be one of them, whole: never a mix.
func TestConcurrentSendsToOneName(t *testing.T) {
	root := t.TempDir()
	fs := startFaultServer(t, root, false)
	fs.data.rateUp.Store(8 << 20) // make the transfers overlap
	const size = 6 << 20
	dirs := []string{t.TempDir(), t.TempDir()}
	for i, d := range dirs {
		writeFile(t, filepath.Join(d, "same.bin"), randomBytes(size, uint64(60+i)))
	}
	results := make(chan result, 2)
	for _, d := range dirs {
		go func() {
			results <- run(t, fs.server, d, nil, "send", "same.bin", fs.addr())
		}()
	}
	var ok int
	for range dirs {
		if r := <-results; r.code == 0 {
			ok++
		} else {
			t.Logf("one send failed: %s", r)
		}
	}
	if ok == 0 {
		t.Fatalf("both sends failed")
	}
	got, err := os.ReadFile(filepath.Join(root, "same.bin"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(dirs[0], "same.bin"))
	b, _ := os.ReadFile(filepath.Join(dirs[1], "same.bin"))
	if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
		n := 0
		for i := range min(len(got), len(a)) {
			if got[i] == a[i] {
				n++
			}
		}
		t.Errorf("same.bin is neither file: %d bytes, %d of them agree with the first sender's", len(got), n)
	}
}

// Nothing listens where the server says its data port is (a firewall, a
// wrong --data-listen): the client fails with a clear message and no
// file appears.
func TestDataPortUnreachable(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, false)
	fs.data.close()
	writeFile(t, filepath.Join(local, "u.bin"), randomBytes(100000, 70))
	r := run(t, fs.server, local, []string{"--json"}, "send", "u.bin", fs.addr())
	if r.code == 0 || !strings.Contains(r.stderr, "data") || !strings.Contains(r.stderr, "refused") {
		t.Errorf("want a failure naming the data connection and the refusal, got %s", r)
	}
	if r.code != 3 && r.code != 4 {
		t.Errorf("exit %d, want 3 (connection) or 4 (transfer)", r.code)
	}
	noFile(t, filepath.Join(root, "u.bin"))
	noFile(t, partName(filepath.Join(root, "u.bin")))
}

// With TLS on the data connection (the default), a damaged byte is not a
// resend: TLS rejects the record and the connection. Without
// reconnecting (--reconnect 0) the transfer fails, saying so, keeps its
// partial file, and a resume completes it; by default the client dials
// again and completes it itself, resuming.
func TestCorruptionUnderTLSFailsCleanly(t *testing.T) {
	if !features.serveState {
		t.Skip("this kerf has no TLS")
	}
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, false)
	const size = 8 << 20
	src := filepath.Join(local, "t.bin")
	writeFile(t, src, randomBytes(size, 17))
	dst := filepath.Join(root, "t.bin")
	// The proxy's flip offset counts the bytes of one connection.
	fs.data.flipUpAt.Store(3 << 20)
	r := run(t, fs.server, local, nil, "send", "--reconnect", "0", "--streams", "1", "t.bin", fs.addr())
	// The server's reset can also reach the client before the answer to
	// its hello, which the proxy, closing both ends at once, then drops
	// (CI, once): that says "pairing stream 0".
	if r.code != 4 || !strings.Contains(r.stderr, "data connection") && !strings.Contains(r.stderr, "pairing stream") {
		t.Fatalf("want exit 4 and an error about the data connection, got %s", r)
	}
	t.Logf("kerf said: %s", r.stderr)
	// A kerf that has data records (it logs data_records) used them.
	if end := waitLogLine(t, fs.server, "session end"); strings.Contains(end, "data_records=") && !strings.Contains(end, "data_records=true") {
		t.Errorf("the session did not use data records: %s", end)
	}
	noFile(t, dst)
	if kept := waitStable(t, partName(dst)); kept <= 0 || kept >= size {
		t.Fatalf("partial file of %d bytes, want some of %d", kept, size)
	}
	r = mustRun(t, fs.server, local, []string{"--json"}, "send", "--resume", "t.bin", fs.addr())
	done := eventsNamed(parseEvents(t, r.stdout), "file_done")
	if len(done) != 1 {
		t.Fatalf("want one file_done:\n%s", r.stdout)
	}
	if d := checkDoneEvent(t, r, "t.bin", size, done[0].Offset); d.Offset == 0 {
		t.Errorf("the resume sent the whole file again")
	}
	sameFile(t, src, dst)

	// Dialling again: the command goes on from the partial by itself.
	src2, dst2 := filepath.Join(local, "t2.bin"), filepath.Join(root, "t2.bin")
	writeFile(t, src2, randomBytes(size, 18))
	fs.data.flipUpAt.Store(fs.data.upBytes.Load() + 3<<20)
	r = mustRun(t, fs.server, local, []string{"--json"}, "send", "--streams", "1", "t2.bin", fs.addr())
	if fs.data.flipUpAt.Load() != 0 {
		t.Fatal("the proxy flipped no bit: the test tested nothing")
	}
	if !strings.Contains(r.stderr, "reconnecting") {
		t.Errorf("no word of dialling again:\n%s", r.stderr)
	}
	done = eventsNamed(parseEvents(t, r.stdout), "file_done")
	if len(done) != 1 || done[0].Offset == 0 {
		t.Errorf("want one file_done, resumed:\n%s", r.stdout)
	}
	sameFile(t, src2, dst2)
}

// With two data connections blocks land out of order; when one
// connection dies the partial keeps its gap-free prefix and the ranges
// that came past it, recorded on it (user.kerf.kept), and nothing else:
// every byte the record vouches for is the source's, the file ends with
// the last range, and the resume sends only the rest.
func TestGetResumeTwoStreamsKeepsWhatCame(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, false)
	const size = 12 << 20
	src := filepath.Join(root, "g.bin")
	data := randomBytes(size, 14)
	writeFile(t, src, data)
	dst := filepath.Join(local, "g.bin")

	fs.data.cutDown.Store(3 << 20)
	r := run(t, fs.server, local, []string{"--json"}, "get", "--reconnect", "0", "--streams", "2", target(fs.addr(), "g.bin"), ".")
	if r.code != 4 {
		t.Fatalf("want exit 4, got %s", r)
	}
	noFile(t, dst)
	var vouched int64 // bytes past the prefix the record vouches for
	if kept, err := os.ReadFile(partName(dst)); err == nil {
		prefix, ranges := keptRecord(t, partName(dst), int64(len(kept)))
		end := prefix
		if !bytes.Equal(kept[:prefix], data[:prefix]) {
			t.Fatalf("the partial's prefix of %d bytes is not the source's", prefix)
		}
		for _, r := range ranges {
			if !bytes.Equal(kept[r[0]:r[1]], data[r[0]:r[1]]) {
				t.Fatalf("the partial's kept range [%d,%d) is not the source's", r[0], r[1])
			}
			vouched += r[1] - r[0]
			end = r[1]
		}
		if int64(len(kept)) != end || end >= size {
			t.Fatalf("partial of %d bytes; its record ends at %d (file %d)", len(kept), end, size)
		}
		t.Logf("kept: prefix %d, ranges %v", prefix, ranges)
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}

	fs.data.cutDown.Store(0)
	r = mustRun(t, fs.server, local, []string{"--json"}, "get", "--streams", "2", "--resume", target(fs.addr(), "g.bin"), ".")
	sameFile(t, src, dst)
	noFile(t, partName(dst))
	if done := eventsNamed(parseEvents(t, r.stdout), "file_done"); len(done) != 1 || done[0].Kept != vouched {
		t.Errorf("want one file_done with kept %d:\n%s", vouched, r.stdout)
	}
}

// keptRecord reads the record of what a partial of size bytes holds:
// its gap-free prefix and the ranges past it (user.kerf.kept, written
// by a receiver that stopped cleanly), or, without one, all of it as
// the prefix.
func keptRecord(t *testing.T, part string, size int64) (prefix int64, ranges [][2]int64) {
	t.Helper()
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(part, "user.kerf.kept", buf)
	if err != nil {
		t.Logf("no record of kept ranges (%v): the partial counts as a prefix", err)
		return size, nil
	}
	p, rest, _ := strings.Cut(string(buf[:n]), ";")
	prefix, err = strconv.ParseInt(p, 16, 64)
	if err != nil {
		t.Fatalf("record %q: %v", buf[:n], err)
	}
	for _, item := range strings.Split(rest, ",") {
		if item == "" {
			continue
		}
		o, e, _ := strings.Cut(item, "-")
		off, err1 := strconv.ParseInt(o, 16, 64)
		end, err2 := strconv.ParseInt(e, 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("record %q: bad range %q", buf[:n], item)
		}
		ranges = append(ranges, [2]int64{off, end})
	}
	return prefix, ranges
}

// The receiving client is killed (SIGKILL) while a block in the middle of
// the file has not arrived but later ones, on the other data connection,
// have: the partial file has a hole, and no one cut it to its gap-free
// prefix. get --resume resumes at the hole instead of from byte 0.
func TestGetResumeAfterClientKilledWithHole(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, true)
	const size, block = 12 << 20, 1 << 20 // block: the server's default block size
	src := filepath.Join(root, "h.bin")
	writeFile(t, src, randomBytes(size, 16))
	dst := filepath.Join(local, "h.bin")
	part := partName(dst)

	fs.data.holdDownAt.Store(block + 1) // the second block stalls on its connection
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := kerfCmd(t, ctx, fs.server, local, []string{"--json"}, "get", "--streams", "2", target(fs.addr(), "h.bin"), ".")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first block is there and a later one beyond the held one.
	waitFor(t, "a hole after the first block", func() bool {
		f, err := os.Open(part)
		if err != nil {
			return false
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil || fi.Size() < 3*block {
			return false
		}
		hole, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE)
		return err == nil && hole == block
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	fs.data.holdDownAt.Store(0)
	noFile(t, dst)

	r := mustRun(t, fs.server, local, []string{"--json"}, "get", "--streams", "2", "--resume", target(fs.addr(), "h.bin"), ".")
	checkDoneEvent(t, r, "h.bin", size, block)
	sameFile(t, src, dst)
	noFile(t, part)
}

// A server stopped with SIGTERM mid-file tells its client why: the
// client's error says the server is shutting down, not only that a
// connection was lost; the partial stays for a resume. SIGINT stops it
// the same way.
func TestServerStoppedMidFileSaysWhy(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		if code, out := signalMidFile(t, sig); code != 4 || !strings.Contains(out, "the server is shutting down") {
			t.Fatalf("%v: want exit 4 saying the server is shutting down, got %d:\n%s", sig, code, out)
		}
	}
}

// A resumed tree sends no file the receiver already has whole (same
// size and time, as rsync's quick check): it is reported as skipped,
// not failed, and only changed or new files move. Both directions.
func TestResumeSkipsFilesAlreadyThere(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	for i, n := range []string{"a.bin", "b.bin", "sub/c.bin"} {
		writeFile(t, filepath.Join(local, "tree", n), randomBytes(100_000+i, uint64(40+i)))
	}
	mustRun(t, srv, local, nil, "send", "-r", "tree", srv.addr)
	// One file changes (size and time), one is new.
	writeFile(t, filepath.Join(local, "tree/b.bin"), randomBytes(70_000, 50))
	writeFile(t, filepath.Join(local, "tree/new.bin"), randomBytes(5_000, 51))
	r := mustRun(t, srv, local, []string{"--json"}, "send", "--resume", "-r", "tree", srv.addr)
	evs := parseEvents(t, r.stdout)
	names := func(kind string) []string {
		var out []string
		for _, e := range eventsNamed(evs, kind) {
			out = append(out, e.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names("file_done"); !slices.Equal(got, []string{"tree/b.bin", "tree/new.bin"}) {
		t.Errorf("sent %q, want only the changed and the new file:\n%s", got, r.stdout)
	}
	if got := names("file_skipped"); !slices.Equal(got, []string{"tree/a.bin", "tree/sub/c.bin"}) {
		t.Errorf("skipped %q, want the two unchanged files:\n%s", got, r.stdout)
	}
	for _, n := range []string{"a.bin", "b.bin", "new.bin", "sub/c.bin"} {
		sameFile(t, filepath.Join(local, "tree", n), filepath.Join(root, "tree", n))
	}

	back := t.TempDir()
	mustRun(t, srv, back, nil, "get", "-r", target(srv.addr, "tree"), ".")
	r = mustRun(t, srv, back, []string{"--json"}, "get", "--resume", "-r", target(srv.addr, "tree"), ".")
	evs = parseEvents(t, r.stdout)
	if got := names("file_skipped"); len(got) != 4 || len(eventsNamed(evs, "file_done")) != 0 {
		t.Errorf("get --resume of a whole copy: want 4 skipped and nothing sent:\n%s", r.stdout)
	}
}

// A resumed send (or get) of a tree of small files the receiver has
// whole sends none of their data: what is there is found in one listing before the
// transfer (protocol.md §6, item 7), not by sending each small file to
// be thrown away (item 6). Only the changed file's bytes travel, and a
// changed mode alone still arrives.
func TestResumeRerunSendsNoData(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	var names []string
	for i := range 40 {
		n := fmt.Sprintf("sub%d/f%02d.bin", i%3, i)
		writeFile(t, filepath.Join(local, "tree", n), randomBytes(8_000+i, uint64(100+i)))
		names = append(names, "tree/"+n)
	}
	mustRun(t, srv, local, nil, "send", "-r", "tree", srv.addr)
	r := mustRun(t, srv, local, []string{"--json"}, "send", "-z", "--resume", "-r", "tree", srv.addr)
	done := lastDone(t, r)
	if done.WireBytes != 0 || done.Bytes != 0 || done.Files == nil || *done.Files != 40 || len(eventsNamed(parseEvents(t, r.stdout), "file_skipped")) != 40 {
		t.Fatalf("rerun of a whole copy: done %+v; want 40 files skipped, no data on the wire:\n%s", done, r.stdout)
	}
	changed := filepath.Join(local, "tree/sub1/f01.bin")
	writeFile(t, changed, randomBytes(9_000, 7))
	os.Chmod(filepath.Join(local, "tree/sub2/f02.bin"), 0o600)
	r = mustRun(t, srv, local, []string{"--json"}, "send", "-z", "--resume", "-r", "tree", srv.addr)
	if done := lastDone(t, r); done.WireBytes < 9_000 || done.WireBytes > 9_000+8_002+1024 || done.Bytes != 9_000 {
		t.Errorf("rerun with one file changed: done %+v; want about 9,000 bytes on the wire", done)
	}
	for _, n := range names {
		sameFile(t, filepath.Join(local, n), filepath.Join(root, n))
	}
	if fi, err := os.Stat(filepath.Join(root, "tree/sub2/f02.bin")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("changed mode: %v, %v; want 0600", fi, err)
	}

	// A leftover partial of a file there whole is not passed over: the
	// per-file check finds the file whole and removes the partial.
	stale := partName(filepath.Join(root, "tree/sub0/f00.bin"))
	writeFile(t, stale, []byte("stale"))
	mustRun(t, srv, local, nil, "send", "--resume", "-r", "tree", srv.addr)
	noFile(t, stale)

	// The same for a get: the server leaves out what the client has.
	back := t.TempDir()
	mustRun(t, srv, back, nil, "get", "-r", target(srv.addr, "tree"), ".")
	for _, sessions := range []string{"1", "3"} {
		before := strings.Count(srv.stderr.String(), "msg=login ")
		r = mustRun(t, srv, back, []string{"--json"}, "get", "-z", "--sessions", sessions, "--resume", "-r", target(srv.addr, "tree"), ".")
		done := lastDone(t, r)
		if done.WireBytes != 0 || done.Bytes != 0 || done.Files == nil || *done.Files != 40 || len(eventsNamed(parseEvents(t, r.stdout), "file_skipped")) != 40 {
			t.Fatalf("get rerun (%s sessions) of a whole copy: done %+v; want 40 files skipped, no data on the wire:\n%s", sessions, done, r.stdout)
		}
		// Nothing to fetch: no more sessions than one.
		if n := strings.Count(srv.stderr.String(), "msg=login ") - before; n != 1 {
			t.Errorf("get rerun (%s sessions) with nothing to fetch: %d logins, want 1", sessions, n)
		}
	}
	staleBack := partName(filepath.Join(back, "tree/sub0/f00.bin"))
	writeFile(t, staleBack, []byte("stale"))
	mustRun(t, srv, back, nil, "get", "--resume", "-r", target(srv.addr, "tree"), ".")
	noFile(t, staleBack)
	writeFile(t, filepath.Join(root, "tree/sub0/f03.bin"), randomBytes(7_000, 8))
	r = mustRun(t, srv, back, []string{"--json"}, "get", "-z", "--resume", "-r", target(srv.addr, "tree"), ".")
	if done := lastDone(t, r); done.WireBytes < 7_000 || done.WireBytes > 7_000+8_003+1024 || done.Bytes != 7_000 {
		t.Errorf("get rerun with one file changed: done %+v; want about 7,000 bytes on the wire", done)
	}
	for _, n := range names {
		sameFile(t, filepath.Join(root, n), filepath.Join(back, n))
	}
}

// Many names on one command line: a resumed send finds them whole in
// listings of a few names each, and a get of them all asks for them in
// one spec, though their names together are far longer than one name's
// 255-byte element (the server checked the whole spec as one name, and
// refused both).
func TestManyNamesInOneSpec(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	var names, remote []string
	for i := range 40 {
		n := fmt.Sprintf("file-%02d-with-a-longer-name.bin", i)
		writeFile(t, filepath.Join(local, n), randomBytes(3000+i, uint64(200+i)))
		names = append(names, n)
		remote = append(remote, target(srv.addr, "in/"+n))
	}
	mustRun(t, srv, local, nil, "send", append(names, target(srv.addr, "in/"))...)
	r := mustRun(t, srv, local, []string{"--json"}, "send", append([]string{"-z", "--resume"}, append(names, target(srv.addr, "in/"))...)...)
	if done := lastDone(t, r); done.WireBytes != 0 || len(eventsNamed(parseEvents(t, r.stdout), "file_skipped")) != 40 {
		t.Errorf("resumed send of 40 names there: done %+v; want all skipped, nothing on the wire:\n%s", done, r.stdout)
	}
	mustRun(t, srv, back, nil, "get", append(remote, ".")...)
	for _, n := range names {
		sameFile(t, filepath.Join(local, n), filepath.Join(back, n))
	}
}

// A client stopped mid-file exits as shells expect of a signalled
// program, 128 + the signal: 130 for Ctrl-C, 143 for SIGTERM (it said
// 130 for both), 129 for SIGHUP (a terminal closed); the server keeps
// the partial for a resume.
func TestClientSignalledExitCode(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}, {syscall.SIGHUP, 129}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			m := startSendMidFile(t)
			m.cmd.Process.Signal(tc.sig)
			m.cmd.Wait()
			if code := m.cmd.ProcessState.ExitCode(); code != tc.want || !strings.Contains(m.out.String(), "interrupted") {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.want, m.out.String())
			}
			// In words a person reads, not the engine's.
			if out := m.out.String(); !strings.Contains(out, "--resume") || strings.Contains(out, "context canceled") {
				t.Errorf("the interruption said:\n%s\nwant words of --resume, not \"context canceled\"", out)
			}
			noFile(t, filepath.Join(m.root, "k.bin"))
		})
	}
}

// A send whose server dies part-way through a tree names every file it
// did not send: each file of the tree has a file_done or a file_error
// event (those not yet begun said nothing, and a script could not tell
// which were missing).
func TestSendEndedEarlyNamesTheRest(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, false)
	names := []string{"t/a", "t/b", "t/c", "t/d", "t/e", "t/f"}
	for i, n := range names {
		writeFile(t, filepath.Join(local, n), randomBytes(2<<20, uint64(20+i)))
	}
	fs.data.rateUp.Store(4 << 20)
	cmd, stdout, stderr := startTreeSend(t, fs, local)
	waitFor(t, "the first file to arrive", func() bool { return fileSize(partName(filepath.Join(root, "t/a"))) > 0 })
	fs.cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 4 {
		t.Fatalf("exit %d, want 4:\n%s", code, stderr.String())
	}
	told := map[string]bool{}
	for _, e := range parseEvents(t, stdout.String()) {
		if e.Event == "file_done" || e.Event == "file_error" {
			told[e.Name] = true
		}
		// Each says it was not sent (or, if its end had gone out, not
		// confirmed), whatever file the cause names.
		if e.Event == "file_error" && !strings.Contains(e.Error, "not sent") && !strings.HasPrefix(e.Error, "not confirmed") {
			t.Errorf("file_error of %s: %q", e.Name, e.Error)
		}
	}
	for _, n := range names {
		if !told[n] {
			t.Errorf("nothing said of %s:\n%s", n, stdout.String())
		}
	}
}

// A file whose end (Z) went out but whose answer never came is "not
// confirmed": the server may have stored it (here it has it whole, to be
// renamed at the group's end), so the client must not say it was not
// sent. The control connection's answers are
// lost from the middle of the first file's data on, then the server
// dies.
func TestSendEndedEarlyNotConfirmed(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, false)
	names := []string{"t/a", "t/b", "t/c"}
	for i, n := range names {
		writeFile(t, filepath.Join(local, n), randomBytes(2<<20, uint64(40+i)))
	}
	fs.data.rateUp.Store(2 << 20) // a second a file
	cmd, stdout, stderr := startTreeSend(t, fs, local)
	// Half of t/a: its F and A have long been answered, its Z not yet.
	waitFor(t, "the first data", func() bool { return fs.data.upBytes.Load() > 1<<20 })
	fs.ctl.dropDown.Store(true)
	// t/a whole (its rename waits for the group's end, for one flush of
	// the batch) and its Z answered, but the answer lost; t/b begun.
	waitFor(t, "t/a received and t/b begun", func() bool {
		return fileSize(partName(filepath.Join(root, "t/a"))) == 2<<20 && fileSize(partName(filepath.Join(root, "t/b"))) > 0
	})
	fs.cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 4 {
		t.Fatalf("exit %d, want 4:\n%s", code, stderr.String())
	}
	errs := map[string]string{}
	for _, e := range parseEvents(t, stdout.String()) {
		if e.Event == "file_done" {
			t.Errorf("%s reported done although no answer came", e.Name)
		}
		if e.Event == "file_error" {
			errs[e.Name] = e.Error
		}
	}
	if !strings.HasPrefix(errs["t/a"], "not confirmed") {
		t.Errorf("t/a (stored, unanswered): %q, want not confirmed\n%s", errs["t/a"], stdout.String())
	}
	for _, n := range names[1:] {
		// Their data may all be in socket buffers by now, Z sent too.
		if !strings.Contains(errs[n], "not sent") && !strings.HasPrefix(errs[n], "not confirmed") {
			t.Errorf("%s: %q, want not sent or not confirmed\n%s", n, errs[n], stdout.String())
		}
	}
	sameFile(t, filepath.Join(local, "t/a"), partName(filepath.Join(root, "t/a")))
}

// A file refused before it had a place in the tree is logged under its
// path in the tree, as complete ones are, not the sender's bare name.
func TestXferLogNamesRefusedFilesByPath(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	xferlog := filepath.Join(t.TempDir(), "xferlog")
	srv := startServer(t, root, serverOpts{args: []string{"--xferlog", xferlog}})
	if err := os.MkdirAll(filepath.Join(root, "cf", "x"), 0o755); err != nil { // in the way
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(local, "x"), []byte("refused"))
	if r := run(t, srv, local, nil, "send", "x", target(srv.addr, "cf/")); r.code != 4 {
		t.Fatalf("send over a directory: want exit 4, got %s", r)
	}
	waitFor(t, "the xferlog line", func() bool { b, _ := os.ReadFile(xferlog); return len(b) > 0 })
	if b, _ := os.ReadFile(xferlog); !strings.Contains(string(b), " /cf/x b _ i r ") || !strings.HasSuffix(string(b), " i\n") {
		t.Errorf("xferlog: want an incomplete line for /cf/x:\n%s", b)
	}
}

// An upload whose data takes longer than the server's idle timeout is
// not idle: the server waits for its Z while the data moves. (It ended
// the session with "timed out on a reliable link" once --idle-timeout
// had passed since the file's A, whatever the data was doing.)
func TestSlowUploadOutlastsIdleTimeout(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	fs := startFaultServer(t, root, false, "--idle-timeout", "2s")
	writeFile(t, filepath.Join(local, "slow.bin"), randomBytes(48<<20, 77))
	fs.data.rateUp.Store(8 << 20) // six seconds of data, more than the socket buffers hold
	r := run(t, fs.server, local, nil, "send", "slow.bin", fs.addr())
	if r.code != 0 {
		t.Fatalf("a slow upload: %s", r)
	}
	sameFile(t, filepath.Join(local, "slow.bin"), filepath.Join(root, "slow.bin"))
}

// startTreeSend starts `kerf --json send -r t` from local to fs, for a
// test that breaks the transfer under it; the command's output is read
// after its Wait.
func startTreeSend(t *testing.T, fs *faultServer, local string) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	t.Cleanup(cancel)
	// (Not dialling again: these tests see how a lost server ends a
	// transfer.)
	cmd = kerfCmd(t, ctx, fs.server, local, []string{"--json"}, "send", "--reconnect", "0", "-r", "t", fs.addr())
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdout, stderr
}

// A receive cut off mid-file is logged in the xferlog as incomplete,
// with the bytes that arrived, not 0.
func TestXferLogCountsBytesOfCutOffFile(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	xferlog := filepath.Join(t.TempDir(), "xferlog")
	fs := startFaultServer(t, root, false, "--xferlog", xferlog)
	data := randomBytes(16<<20, 16)
	writeFile(t, filepath.Join(local, "k.bin"), data)
	fs.data.rateUp.Store(8 << 20)
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, fs.server, local, nil, "send", "k.bin", fs.addr())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	part := partName(filepath.Join(root, "k.bin"))
	waitFor(t, "the partial file's first block", func() bool { return hasPrefix(part, data[:1<<20]) })
	cmd.Process.Kill()
	cmd.Wait()
	var line string
	waitFor(t, "an xferlog line", func() bool {
		b, _ := os.ReadFile(xferlog)
		line = string(b)
		return strings.Contains(line, "\n")
	})
	f := strings.Fields(line)
	if len(f) < 18 || f[17] != "i" || f[8] != "/k.bin" {
		t.Fatalf("xferlog line %q: want one incomplete line for /k.bin", line)
	}
	if n, err := strconv.ParseInt(f[7], 10, 64); err != nil || n < 1<<20 || n > 16<<20 {
		t.Errorf("xferlog says %s bytes; want what arrived, at least the first MiB:\n%s", f[7], line)
	}
}

// A fetch whose data connection dies mid-file is logged by the server
// as an incomplete outgoing transfer under the file's path in the
// served tree, as a complete one is (it was the client's bare name).
func TestXferLogFailedGet(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	xferlog := filepath.Join(t.TempDir(), "xferlog")
	fs := startFaultServer(t, root, false, "--xferlog", xferlog)
	writeFile(t, filepath.Join(root, "sub/d.bin"), randomBytes(16<<20, 13))
	fs.data.cutDown.Store(5 << 20)
	r := run(t, fs.server, local, nil, "get", "--reconnect", "0", "--streams", "1", target(fs.addr(), "sub/d.bin"), ".")
	if r.code != 4 {
		t.Fatalf("want exit 4, got %s", r)
	}
	waitFor(t, "the xferlog line of the failed fetch", func() bool {
		b, _ := os.ReadFile(xferlog)
		return strings.Count(string(b), "\n") == 1
	})
	if b, _ := os.ReadFile(xferlog); !strings.Contains(string(b), " /sub/d.bin b _ o r ") || !strings.HasSuffix(string(b), " i\n") {
		t.Errorf("xferlog after the failed fetch: want an incomplete outgoing line for /sub/d.bin:\n%s", b)
	}
}

// An anonymous fetch is logged with access mode a and user anonymous,
// as the xferlog format has it (QA: logged as a real user's, r).
func TestXferLogAnonymous(t *testing.T) {
	root := t.TempDir()
	xferlog := filepath.Join(t.TempDir(), "xferlog")
	srv := startServer(t, root, serverOpts{args: []string{"--anonymous", "--xferlog", xferlog}})
	writeFile(t, filepath.Join(root, "pub.txt"), []byte("public"))
	mustRun(t, srv, t.TempDir(), nil, "get", "-u", "anonymous", target(srv.addr, "pub.txt"), ".")
	waitFor(t, "the xferlog line", func() bool {
		b, _ := os.ReadFile(xferlog)
		return strings.Contains(string(b), "\n")
	})
	if b, _ := os.ReadFile(xferlog); !strings.Contains(string(b), " 6 /pub.txt b _ o a anonymous ") {
		t.Errorf("xferlog of an anonymous get:\n%s", b)
	}
}

// A server stopped by a signal while idle says so, as it said where it
// served (QA: not a word), and exits 0: a stop asked for, which a
// service manager takes as a clean end (README).
func TestServerStoppedSaysSoExitsZero(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		word string
	}{{syscall.SIGTERM, "terminated"}, {syscall.SIGINT, "interrupt"}} {
		srv := startServer(t, t.TempDir(), serverOpts{})
		srv.cmd.Process.Signal(tc.sig)
		select {
		case <-srv.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%v: the server did not stop", tc.sig)
		}
		if code := srv.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(srv.stderr.String(), "kerf: stopped ("+tc.word+")") {
			t.Errorf("%v: exit %d, want 0 saying it stopped (%s):\n%s", tc.sig, code, tc.word, srv.stderr.String())
		}
	}
}

// With --drain, a stopped server takes no new session but lets the
// transfer under way finish, then exits 0; a second signal ends what is
// left at once, its partial kept.
func TestServerDrainsOnStop(t *testing.T) {
	m := startSendMidFile(t, "--drain", "1m")
	m.fs.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, "the server to say it drains", func() bool { return strings.Contains(m.fs.server.stderr.String(), "draining") })
	// A service's SIGHUP meanwhile is its reload still, not a second
	// signal that cuts (review).
	m.fs.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the server to take the SIGHUP", func() bool { return strings.Contains(m.fs.server.stderr.String(), "SIGHUP: still serving") })
	// No new session meanwhile.
	if r := run(t, m.fs.server, t.TempDir(), nil, "ls", m.fs.server.addr); r.code != 3 || !strings.Contains(r.stderr, "refused") {
		t.Errorf("a new session while draining: %s; want exit 3, refused", r)
	}
	if err := m.cmd.Wait(); err != nil {
		t.Fatalf("the send under way: %v\n%s", err, m.out.String())
	}
	if got, err := os.ReadFile(filepath.Join(m.root, "k.bin")); err != nil || !bytes.Equal(got, randomBytes(16<<20, 15)) {
		t.Fatalf("the copy differs from what was sent (%v)", err)
	}
	select {
	case <-m.fs.server.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the server did not stop once the transfer ended:\n%s", m.fs.server.stderr.String())
	}
	if code := m.fs.server.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(m.fs.server.stderr.String(), "kerf: stopped (terminated)") {
		t.Errorf("exit %d, want 0 saying it stopped:\n%s", code, m.fs.server.stderr.String())
	}

	// A second signal: the transfer is ended, its partial kept.
	m = startSendMidFile(t, "--drain", "1m")
	m.fs.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, "the server to say it drains", func() bool { return strings.Contains(m.fs.server.stderr.String(), "draining") })
	m.fs.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.fs.server.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("a second signal did not stop the server:\n%s", m.fs.server.stderr.String())
	}
	if err := m.cmd.Wait(); err == nil {
		t.Errorf("the send cut short succeeded:\n%s", m.out.String())
	}
	noFile(t, filepath.Join(m.root, "k.bin"))
	if fileSize(m.part) <= 0 {
		t.Errorf("no partial kept of the send cut short")
	}
}

// SIGHUP, a daemon's reload, leaves a running server without a
// terminal serving, says so, and cuts no transfer (QA: an operator's HUP
// "to reload the users" stopped the server and every transfer with it).
func TestServerHangupKeepsServing(t *testing.T) {
	m := startSendMidFile(t)
	m.fs.cmd.Process.Signal(syscall.SIGHUP)
	if err := m.cmd.Wait(); err != nil {
		t.Fatalf("the send under way: %v\n%s", err, m.out.String())
	}
	if got, err := os.ReadFile(filepath.Join(m.root, "k.bin")); err != nil || !bytes.Equal(got, randomBytes(16<<20, 15)) {
		t.Fatalf("the copy differs from what was sent (%v)", err)
	}
	if !strings.Contains(m.fs.server.stderr.String(), "SIGHUP: still serving") {
		t.Errorf("the server did not say it keeps serving:\n%s", m.fs.server.stderr.String())
	}
	select {
	case <-m.fs.server.done:
		t.Fatalf("the server stopped:\n%s", m.fs.server.stderr.String())
	default:
	}
}
