package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kerf/internal/peertest"
)

// ckermit runs C-Kermit on script in dir; the script's commands are
// followed by "exit 0", and a failing command exits with its own status.
type ckermit struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

func startCKermit(t *testing.T, dir, script string) *ckermit {
	t.Helper()
	bin := peertest.RequirePeer(t, "kermit")
	work := t.TempDir()
	ksc := filepath.Join(work, "script.ksc")
	if err := os.WriteFile(ksc, []byte(script+"\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k := &ckermit{out: &syncBuffer{}, done: make(chan struct{})}
	// The command file must come before -Y; stdin is /dev/null so a
	// script that stops on an error cannot wait for the keyboard.
	k.cmd = exec.Command(bin, ksc, "-Y")
	k.cmd.Dir = dir
	k.cmd.Stdout, k.cmd.Stderr = k.out, k.out
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { k.err = k.cmd.Wait(); close(k.done) }()
	t.Cleanup(func() {
		select {
		case <-k.done:
		default:
			syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
			<-k.done
		}
	})
	return k
}

// wait waits for C-Kermit to exit and returns its exit status.
func (k *ckermit) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-k.done:
	case <-time.After(commandTimeout):
		syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
		<-k.done
		t.Fatalf("C-Kermit still running after %v:\n%s", commandTimeout, k.out.String())
	}
	return k.cmd.ProcessState.ExitCode()
}

// C-Kermit as the client of `kerf serve`, in classic Kermit: send, get,
// remote directory, finish.
func TestCKermitClientAgainstKerfServe(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{classic: true})
	up := randomBytes(300000, 21)
	down := randomBytes(200001, 22)
	writeFile(t, filepath.Join(local, "up.bin"), up)
	writeFile(t, filepath.Join(root, "down.bin"), down)
	host, port, _ := net.SplitHostPort(srv.addr)
	script := fmt.Sprintf(`set host %s %s /raw-socket
if fail exit 1 "connect failed"
%sset file type binary
set transfer display brief
send up.bin
if fail exit 2 "send failed"
get down.bin
if fail exit 3 "get failed"
remote directory
if fail exit 4 "remote directory failed"
finish
if fail exit 5 "finish failed"`, host, port, ckermitLogin())
	k := startCKermit(t, local, script)
	if code := k.wait(t); code != 0 {
		t.Fatalf("C-Kermit exit %d:\n%s", code, k.out.String())
	}
	sameFile(t, filepath.Join(local, "up.bin"), filepath.Join(root, "up.bin"))
	sameFile(t, filepath.Join(root, "down.bin"), filepath.Join(local, "down.bin"))
	out := k.out.String()
	if !strings.Contains(out, "down.bin") || !strings.Contains(out, "200001") {
		t.Errorf("remote directory did not list down.bin with its size:\n%s", out)
	}
}

// runCKermitClient runs C-Kermit in dir as a client of srv (raw TCP,
// logged in) through the script body, then FINISH, and fails the test
// unless it exits 0 (the body says "exit N" for what went wrong).
func runCKermitClient(t *testing.T, srv *server, dir, body string) *ckermit {
	t.Helper()
	host, port, _ := net.SplitHostPort(srv.addr)
	script := fmt.Sprintf("set host %s %s /raw-socket\nif fail exit 1 \"connect failed\"\n%s%s\nfinish", host, port, ckermitLogin(), body)
	k := startCKermit(t, dir, script)
	if code := k.wait(t); code != 0 {
		t.Fatalf("C-Kermit exit %d:\n%s", code, k.out.String())
	}
	return k
}

// C-Kermit's REMOTE PRINT and SEND /MAIL ask for a file to be printed
// or mailed (the A packet's disposition): kerf, which only stores files,
// refuses them, and C-Kermit says they failed; the user's file of that
// name stays (QA s: it was replaced, and C-Kermit said the print was
// done). A plain send after them still goes.
func TestCKermitPrintAndMailRefused(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{classic: true})
	for _, n := range []string{"p.txt", "m.txt"} {
		writeFile(t, filepath.Join(root, n), []byte("the user's own "+n+"\n"))
		writeFile(t, filepath.Join(local, n), []byte("sent "+n+"\n"))
	}
	writeFile(t, filepath.Join(local, "plain.txt"), []byte("plain\n"))
	runCKermitClient(t, srv, local, `set transfer display brief
remote print p.txt
if success exit 2 "remote print succeeded"
send /mail:someone@example.com m.txt
if success exit 3 "send /mail succeeded"
send plain.txt
if fail exit 4 "send failed"`)
	for _, n := range []string{"p.txt", "m.txt"} {
		if b, _ := os.ReadFile(filepath.Join(root, n)); string(b) != "the user's own "+n+"\n" {
			t.Errorf("%s at the server now holds %q", n, b)
		}
	}
	sameFile(t, filepath.Join(local, "plain.txt"), filepath.Join(root, "plain.txt"))
}

// kerf's E messages reach C-Kermit, which shows an E's data as it
// comes, as plain text: no repeat counts, no doubled prefixes (QA s:
// "~$z~%0" for zzzz00000, "a##b#~c" for a#b~c). Read from C-Kermit's
// packet log.
func TestCKermitSeesPlainErrorText(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{classic: true})
	plog := filepath.Join(t.TempDir(), "packets.log")
	runCKermitClient(t, srv, local, fmt.Sprintf(`log packets %s
remote delete a#b~c&d.txt
remote cd zzzz00000
close packets`, plog))
	b, err := os.ReadFile(plog)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a#b~c&d.txt: no such file or directory", "zzzz00000"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("C-Kermit's packet log has no E saying %q:\n%s", want, b)
		}
	}
}

// C-Kermit's PSEND sends a file's tail from an offset, announcing the
// whole length: kerf fails it and keeps nothing, so that a RESEND after
// it sends the file whole and right (QA s: the tail was kept as the
// partial, and the RESEND "completed" it into the wrong bytes).
func TestCKermitPsendKeepsNoPartial(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{classic: true})
	data := randomBytes(300_000, 61)
	writeFile(t, filepath.Join(local, "big.bin"), data)
	runCKermitClient(t, srv, local, `set file type binary
psend big.bin 1000
if success exit 2 "psend stored"
resend big.bin
if fail exit 3 "resend failed"`)
	sameContent(t, filepath.Join(root, "big.bin"), data)
	noFile(t, filepath.Join(root, ".big.bin.kerf-part"))
}

// A tree sent to C-Kermit comes without its empty directories, which a
// classic Kermit cannot be asked to make: said, not lost without a word
// (QA s).
func TestKerfSendTreeToCKermitSaysEmptyDirs(t *testing.T) {
	ckdir, local := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "tree/full/f.txt"), []byte("f\n"))
	if err := os.MkdirAll(filepath.Join(local, "tree/emptyd"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, addr := ckermitServer(t, ckdir)
	r := run(t, nil, local, nil, "send", "--classic", "-r", "tree", target(addr, ""))
	if r.code != 0 || !strings.Contains(r.stderr, "empty directory is not made") || !strings.Contains(r.stderr, "tree/emptyd") {
		t.Fatalf("send -r to C-Kermit: %s; want exit 0 and tree/emptyd said not made", r)
	}
	sameFile(t, filepath.Join(local, "tree/full/f.txt"), filepath.Join(ckdir, "tree/full/f.txt"))
}

// ckermitServer starts C-Kermit as a Kermit server listening on a TCP
// port in dir, for one connection, and returns its address once it
// listens.
func ckermitServer(t *testing.T, dir string, settings ...string) (*ckermit, string) {
	t.Helper()
attempts:
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		k := startCKermit(t, dir, fmt.Sprintf(`set host * %d
if fail exit 1 "listen failed"
set file type binary
set file collision overwrite
%sserver`, port, strings.Join(append(settings, ""), "\n")))
		// Not by connecting: C-Kermit serves the first connection only.
		// Its "Listening" message is block-buffered into a pipe, so look
		// for the listening socket instead.
		deadline := time.Now().Add(20 * time.Second)
		for !listening(port) {
			select {
			case <-k.done:
				if strings.Contains(k.out.String(), "Unable to bind") && attempt < 5 {
					// The free port was taken by another test's socket
					// between freePort and C-Kermit's bind: another.
					continue attempts
				}
				t.Fatalf("C-Kermit exited before listening:\n%s", k.out.String())
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("C-Kermit does not listen:\n%s", k.out.String())
			}
		}
		return k, fmt.Sprintf("127.0.0.1:%d", port)
	}
}

// listening reports whether some process listens on TCP port on IPv4.
func listening(port int) bool {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false
	}
	want := fmt.Sprintf(":%04X ", port)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// local_address rem_address st: state 0A is LISTEN.
		if len(f) > 3 && strings.HasSuffix(f[1]+" ", want) && f[3] == "0A" {
			return true
		}
	}
	return false
}

// kerf as the client of C-Kermit's server mode on a socket, in classic
// Kermit (--classic): send a file to it.
func TestKerfSendToCKermitServer(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "up.bin"), randomBytes(250000, 23))
	_, addr := ckermitServer(t, ckdir)
	r := run(t, nil, local, []string{"--json"}, "send", "--classic", "up.bin", addr)
	if r.code != 0 {
		t.Fatalf("kerf send --classic to C-Kermit: %s", r)
	}
	sameFile(t, filepath.Join(local, "up.bin"), filepath.Join(ckdir, "up.bin"))
	checkDoneEvent(t, r, "up.bin", 250000, 0)
}

// kerf as the client of C-Kermit's server mode: get a file from it with
// the documented HOST:PORT/NAME form.
func TestKerfGetFromCKermitServer(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ckdir, "down.bin"), randomBytes(180000, 24))
	k, addr := ckermitServer(t, ckdir)
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, nil, local, nil, "get", "--classic", target(addr, "down.bin"), ".")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("kerf get --classic %s from C-Kermit: %v\n%s\n--- C-Kermit ---\n%s", target(addr, "down.bin"), err, out.String(), k.out.String())
	}
	sameFile(t, filepath.Join(ckdir, "down.bin"), filepath.Join(local, "down.bin"))
}

// A C-Kermit server asked for several names sends those it has and
// says nothing of the others: kerf names the missing one and exits 4
// (it exited 0), and a name C-Kermit converted (capitals) still counts
// as arrived.
func TestKerfGetMissingNameFromCKermitServer(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ckdir, "here.bin"), randomBytes(1000, 25))
	writeFile(t, filepath.Join(ckdir, "MixedCase.txt"), []byte("mixed"))
	_, addr := ckermitServer(t, ckdir)
	r := run(t, nil, local, []string{"--json"}, "get", "--classic", target(addr, "here.bin"), target(addr, "MixedCase.txt"), target(addr, "nothere.bin"), ".")
	if r.code != 4 || !strings.Contains(r.stdout, `"name":"nothere.bin"`) || strings.Contains(r.stdout, `"name":"here.bin","error"`) {
		t.Fatalf("want exit 4 naming nothere.bin alone:\n%s", r)
	}
	sameFile(t, filepath.Join(ckdir, "here.bin"), filepath.Join(local, "here.bin"))
	for _, e := range eventsNamed(parseEvents(t, r.stdout), "file_error") {
		if e.Name != "nothere.bin" {
			t.Errorf("file_error for %s, which arrived:\n%s", e.Name, r.stdout)
		}
	}
}

// C-Kermit's RESEND and REGET against kerf serve: kerf's receiver answers
// the recovery request with "1<len><n>" plus its own "c<len><crc>" field,
// which C-Kermit must ignore; kerf's sender honours C-Kermit's "1<len><n>".
func TestCKermitResendAndReget(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{classic: true})
	up := randomBytes(400000, 81)
	down := randomBytes(300000, 82)
	writeFile(t, filepath.Join(local, "up.bin"), up)
	writeFile(t, partName(filepath.Join(root, "up.bin")), up[:123456]) // kerf's partial
	writeFile(t, filepath.Join(root, "down.bin"), down)
	writeFile(t, filepath.Join(local, "down.bin"), down[:100000]) // C-Kermit's partial
	host, port, _ := net.SplitHostPort(srv.addr)
	k := startCKermit(t, local, fmt.Sprintf(`set host %s %s /raw-socket
if fail exit 1 "connect failed"
%sset file type binary
log transactions tx.log
resend up.bin
if fail exit 2 "resend failed"
reget down.bin
if fail exit 3 "reget failed"
finish`, host, port, ckermitLogin()))
	if code := k.wait(t); code != 0 {
		log, _ := os.ReadFile(filepath.Join(local, "tx.log"))
		t.Fatalf("C-Kermit exit %d:\n%s\n--- transaction log ---\n%s", code, k.out.String(), log)
	}
	sameFile(t, filepath.Join(local, "up.bin"), filepath.Join(root, "up.bin"))
	noFile(t, partName(filepath.Join(root, "up.bin")))
	want := filepath.Join(t.TempDir(), "down.bin")
	writeFile(t, want, down)
	sameFile(t, want, filepath.Join(local, "down.bin"))
	// Only the rests moved: C-Kermit logs the bytes it transferred.
	log, _ := os.ReadFile(filepath.Join(local, "tx.log"))
	for _, w := range []string{fmt.Sprintf("complete, size: %d", 400000-123456), fmt.Sprintf("complete, size: %d", 300000-100000)} {
		if !strings.Contains(string(log), w) {
			t.Errorf("C-Kermit's log does not say %q (was the transfer resumed?):\n%s", w, log)
		}
	}
}

// kerf --resume against a C-Kermit server: RESEND (A with "+R", C-Kermit
// answers "1<len><n>" without kerf's CRC field) and REGET (J packet).
func TestKerfResumeWithCKermitServer(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	up := randomBytes(260000, 91)
	writeFile(t, filepath.Join(local, "up.bin"), up)
	writeFile(t, filepath.Join(ckdir, "up.bin"), up[:60000])
	_, addr := ckermitServer(t, ckdir)
	r := run(t, nil, local, []string{"--json"}, "send", "--classic", "--resume", "up.bin", addr)
	if r.code != 0 {
		t.Fatalf("kerf send --classic --resume to C-Kermit: %s", r)
	}
	sameFile(t, filepath.Join(local, "up.bin"), filepath.Join(ckdir, "up.bin"))
	checkDoneEvent(t, r, "up.bin", 260000, 60000)

	down := randomBytes(220000, 92)
	writeFile(t, filepath.Join(ckdir, "down.bin"), down)
	writeFile(t, partName(filepath.Join(local, "down.bin")), down[:70000])
	_, addr = ckermitServer(t, ckdir)
	r = run(t, nil, local, []string{"--json"}, "get", "--classic", "--resume", target(addr, "down.bin"), ".")
	if r.code != 0 {
		t.Fatalf("kerf get --classic --resume from C-Kermit: %s", r)
	}
	sameFile(t, filepath.Join(ckdir, "down.bin"), filepath.Join(local, "down.bin"))
	checkDoneEvent(t, r, "down.bin", 220000, 70000)

	// REGET of a file kerf has whole (same length and time): C-Kermit is
	// told to go on from its end, and sends nothing (it sent it all).
	when := time.Date(2021, 2, 3, 4, 5, 6, 0, time.UTC)
	for _, p := range []string{filepath.Join(ckdir, "down.bin"), filepath.Join(local, "down.bin")} {
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
	}
	_, addr = ckermitServer(t, ckdir)
	r = run(t, nil, local, []string{"--json"}, "get", "--classic", "--resume", target(addr, "down.bin"), ".")
	evs := parseEvents(t, r.stdout)
	if r.code != 0 || len(eventsNamed(evs, "file_skipped")) != 1 || lastDone(t, r).Bytes != 0 {
		t.Fatalf("REGET of a file there whole: want it skipped, nothing moved:\n%s", r)
	}
	sameFile(t, filepath.Join(ckdir, "down.bin"), filepath.Join(local, "down.bin"))
}

// kerf --resume to a C-Kermit server that has a longer file of the name
// (a copy replaced by a bigger version, a local file that shrank): that
// is no partial of it. C-Kermit opens it to append, so kerf discards
// and sends the file afresh; it stored the old bytes and then the whole
// file, and said done (QA).
func TestKerfResumeOverLongerFileAtCKermitServer(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "r.bin"), randomBytes(3000000, 95))
	writeFile(t, filepath.Join(ckdir, "r.bin"), randomBytes(4000000, 96))
	_, addr := ckermitServer(t, ckdir)
	r := run(t, nil, local, []string{"--json"}, "send", "--classic", "--resume", "r.bin", addr)
	if r.code != 0 {
		t.Fatalf("kerf send --classic --resume over a longer file: %s", r)
	}
	sameFile(t, filepath.Join(local, "r.bin"), filepath.Join(ckdir, "r.bin"))
}

// One file sent to a name on a C-Kermit server is stored under it, as
// on a kerf server: C-Kermit refuses the cd into it with "Can't change
// directory" whether it is missing or a file (QA: always failed).
func TestKerfSendAsNameToCKermitServer(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "a.txt"), randomBytes(5000, 97))
	if err := os.Mkdir(filepath.Join(ckdir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ckdir, "old.bin"), randomBytes(100, 98))
	for _, as := range []string{"top.txt", "sub/b.txt", "old.bin"} {
		_, addr := ckermitServer(t, ckdir)
		if r := run(t, nil, local, nil, "send", "--classic", "a.txt", target(addr, as)); r.code != 0 {
			t.Fatalf("send a.txt to %s: %s", as, r)
		}
		sameFile(t, filepath.Join(local, "a.txt"), filepath.Join(ckdir, as))
	}
}

// Names in capitals from a C-Kermit server (README, a Unix Kermit's
// names are literal) keep them, as C-Kermit's own client keeps them: kerf
// stored readme (QA).
func TestKerfGetCapitalNamesFromCKermitServer(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ckdir, "README"), []byte("read me\n"))
	writeFile(t, filepath.Join(ckdir, "Makefile"), []byte("all:\n"))
	_, addr := ckermitServer(t, ckdir)
	if r := run(t, nil, local, nil, "get", "--classic", target(addr, "README"), target(addr, "Makefile"), "."); r.code != 0 {
		t.Fatalf("get README Makefile: %s", r)
	}
	for _, n := range []string{"README", "Makefile"} {
		sameFile(t, filepath.Join(ckdir, n), filepath.Join(local, n))
	}
	if _, err := os.Stat(filepath.Join(local, "readme")); err == nil {
		t.Error("README stored as readme")
	}
}

// A get of several names from a C-Kermit server, some with spaces: each
// arrives (C-Kermit's server takes a braced name alone, so kerf asks for
// each in its own GET), and a missing one, even first, fails only itself.
func TestKerfGetNamesWithSpacesFromCKermitServer(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	names := []string{"a b.txt", "c.txt", "d e f.bin"}
	for i, n := range names {
		writeFile(t, filepath.Join(ckdir, n), randomBytes(3000+i, uint64(60+i)))
	}
	_, addr := ckermitServer(t, ckdir)
	args := []string{"get", "--classic", target(addr, "nothere.bin")}
	for _, n := range names {
		args = append(args, target(addr, n))
	}
	r := run(t, nil, local, []string{"--json"}, args[0], append(args[1:], ".")...)
	if r.code != 4 || !strings.Contains(r.stdout, `"name":"nothere.bin"`) {
		t.Fatalf("want exit 4 naming nothere.bin:\n%s", r)
	}
	for _, n := range names {
		sameFile(t, filepath.Join(ckdir, n), filepath.Join(local, n))
	}
	for _, e := range eventsNamed(parseEvents(t, r.stdout), "file_error") {
		if e.Name != "nothere.bin" {
			t.Errorf("file_error for %s, which arrived:\n%s", e.Name, r.stdout)
		}
	}
}

// A C-Kermit server set to block check 5 (type 3 on every packet, the
// Send-Init too) takes kerf's files at once over TCP: it NAKs kerf's
// type-1 S in type 3, and kerf sends it again in type 3. (kerf waited
// 21 timeouts of 20 s: nothing is resent on timeouts over TCP.)
func TestKerfToCKermitServerBlockCheck5(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "a.bin"), randomBytes(12345, 31))
	_, addr := ckermitServer(t, ckdir, "set block-check 5")
	mustRun(t, nil, local, nil, "send", "--classic", "a.bin", addr)
	sameFile(t, filepath.Join(local, "a.bin"), filepath.Join(ckdir, "a.bin"))
}

// C-Kermit's REMOTE TYPE and REMOTE SPACE against kerf serve, and its
// LOGOUT: the session is logged out (a command after it asks for a
// login), and the logout is no failed login.
func TestCKermitTypeSpaceLogout(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{classic: true})
	writeFile(t, filepath.Join(root, "notes.txt"), []byte("kerf types this line\n"))
	host, port, _ := net.SplitHostPort(srv.addr)
	k := startCKermit(t, local, fmt.Sprintf(`set host %s %s /raw-socket
if fail exit 1 "connect failed"
%sremote type notes.txt
if fail exit 2 "remote type failed"
remote space
if fail exit 3 "remote space failed"
logout
remote pwd
if success exit 4 "remote pwd after logout succeeded"
exit 0`, host, port, ckermitLogin()))
	if code := k.wait(t); code != 0 {
		t.Fatalf("C-Kermit exit %d:\n%s", code, k.out.String())
	}
	out := k.out.String()
	if !strings.Contains(out, "kerf types this line") || !strings.Contains(out, "bytes free") {
		t.Errorf("C-Kermit's output lacks the typed line or the free space:\n%s", out)
	}
	if strings.Contains(srv.stderr.String(), "login failed") {
		t.Errorf("the logout counted as a failed login:\n%s", srv.stderr.String())
	}
}

// A recursive get of a directory's name from C-Kermit's server, which
// answers "File is not readable", asks again for DIR/* from inside its
// parent: the tree comes under the directory's name, as from a kerf
// server (QA: the README's get -r host/dir failed), and the server is
// back in its directory after. Asked for DIR/* by the user, the tree
// comes under the path it has there, as before; a file that is not
// readable keeps its error.
func TestKerfGetTreeFromCKermitServer(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ckdir, "sub/tree/a.txt"), []byte("a"))
	writeFile(t, filepath.Join(ckdir, "sub/tree/d/b.txt"), []byte("b"))
	writeFile(t, filepath.Join(ckdir, "top/c.txt"), []byte("c"))
	k, addr := ckermitServer(t, ckdir)
	r := run(t, nil, local, []string{"--json"}, "get", "--classic", "-r", target(addr, "sub/tree"), "out/")
	if r.code != 0 {
		t.Fatalf("get -r of a directory from C-Kermit: %s\n--- C-Kermit ---\n%s", r, k.out.String())
	}
	sameFile(t, filepath.Join(ckdir, "sub/tree/a.txt"), filepath.Join(local, "out/tree/a.txt"))
	sameFile(t, filepath.Join(ckdir, "sub/tree/d/b.txt"), filepath.Join(local, "out/tree/d/b.txt"))
	if evs := parseEvents(t, r.stdout); len(eventsNamed(evs, "file_error")) != 0 || len(eventsNamed(evs, "file_done")) != 2 {
		t.Errorf("get -r sub/tree: %s", r.stdout)
	}
	_, addr = ckermitServer(t, ckdir)
	mustRun(t, nil, local, nil, "get", "--classic", "-r", target(addr, "top"), ".")
	sameFile(t, filepath.Join(ckdir, "top/c.txt"), filepath.Join(local, "top/c.txt"))
	_, addr = ckermitServer(t, ckdir)
	mustRun(t, nil, local, nil, "get", "--classic", "-r", target(addr, "sub/tree/*"), ".")
	sameFile(t, filepath.Join(ckdir, "sub/tree/d/b.txt"), filepath.Join(local, "sub/tree/d/b.txt"))
	_, addr = ckermitServer(t, ckdir)
	if r := run(t, nil, local, nil, "get", "--classic", "-r", target(addr, "nothere"), "."); r.code != 4 {
		t.Errorf("get -r of a missing name from C-Kermit: %s", r)
	}
}

// A C-Kermit server told SET PARITY over TCP answers 7-bit with parity
// and asks for 8th-bit prefixing: kerf --classic finds the parity and
// follows, both ways (before, nothing it sent was answered).
func TestKerfWithCKermitServerParity(t *testing.T) {
	for _, tc := range []struct{ parity, verb string }{{"even", "send"}, {"odd", "get"}, {"mark", "send"}} {
		t.Run(tc.parity+" "+tc.verb, func(t *testing.T) {
			local, ckdir := t.TempDir(), t.TempDir()
			data := randomBytes(120000, 27)
			var r result
			if tc.verb == "send" {
				writeFile(t, filepath.Join(local, "f.bin"), data)
				_, addr := ckermitServer(t, ckdir, "set parity "+tc.parity)
				r = run(t, nil, local, nil, "send", "--classic", "f.bin", addr)
			} else {
				writeFile(t, filepath.Join(ckdir, "f.bin"), data)
				_, addr := ckermitServer(t, ckdir, "set parity "+tc.parity)
				r = run(t, nil, local, nil, "get", "--classic", target(addr, "f.bin"), ".")
			}
			if r.code != 0 {
				t.Fatalf("kerf %s --classic with C-Kermit at parity %s: %s", tc.verb, tc.parity, r)
			}
			sameFile(t, filepath.Join(local, "f.bin"), filepath.Join(ckdir, "f.bin"))
		})
	}
}

// A C-Kermit server that sends path names (SET SEND PATHNAMES RELATIVE)
// and a get without -r: the file lands by its own name in the
// destination, as the README says, and counts as arrived (it landed at
// dest/sub/f.txt, and was then named missing: exit 4).
func TestKerfGetFromCKermitServerSendingPaths(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ckdir, "sub/f.txt"), randomBytes(5000, 28))
	_, addr := ckermitServer(t, ckdir, "set send pathnames relative")
	r := run(t, nil, local, nil, "get", "--classic", target(addr, "sub/f.txt"), "dest/")
	if r.code != 0 {
		t.Fatalf("kerf get --classic of sub/f.txt: %s", r)
	}
	sameFile(t, filepath.Join(ckdir, "sub/f.txt"), filepath.Join(local, "dest/f.txt"))
	noFile(t, filepath.Join(local, "dest/sub"))
}

// One GET whose files a C-Kermit server sends with paths that end in
// the same name (a/x, b/x): without -r both would be x, and the second
// is refused, not stored over the first without a word.
func TestKerfGetFromCKermitServerPathsEndingAlike(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ckdir, "a/x"), []byte("from a"))
	writeFile(t, filepath.Join(ckdir, "b/x"), []byte("from b"))
	_, addr := ckermitServer(t, ckdir, "set send pathnames relative")
	r := run(t, nil, local, []string{"--json"}, "get", "--classic", target(addr, "*/x"), "dest/")
	got, err := os.ReadFile(filepath.Join(local, "dest/x"))
	if err != nil {
		t.Fatalf("dest/x: %v\n%s", err, r)
	}
	first := string(got)
	if r.code != 4 || first != "from a" && first != "from b" {
		t.Fatalf("want exit 4 with dest/x holding one file whole: %q\n%s", got, r)
	}
	if errs := eventsNamed(parseEvents(t, r.stdout), "file_error"); len(errs) != 1 {
		t.Errorf("want one file_error for the second x:\n%s", r.stdout)
	}
}

// A C-Kermit server keeps its directory from one client to the next: a
// send into a directory of it takes it back where it was after (it was
// left in the directory, and the next client's paths went astray).
func TestKerfSendToCKermitServerDirLeavesItsDirectory(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "f.txt"), []byte("sent"))
	writeFile(t, filepath.Join(ckdir, "top.txt"), []byte("at the top"))
	port := freePort(t)
	serve := fmt.Sprintf("set host * %d\nif fail exit 1 \"listen failed\"\nserver\nhangup\n", port)
	k := startCKermit(t, ckdir, "set file type binary\nset file collision overwrite\n"+serve+serve)
	for deadline := time.Now().Add(20 * time.Second); !listening(port); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("C-Kermit does not listen:\n%s", k.out.String())
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	mustRun(t, nil, local, nil, "send", "--classic", "f.txt", target(addr, "up/"))
	sameFile(t, filepath.Join(local, "f.txt"), filepath.Join(ckdir, "up/f.txt"))
	for deadline := time.Now().Add(20 * time.Second); !listening(port); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("C-Kermit does not listen again:\n%s", k.out.String())
		}
	}
	mustRun(t, nil, local, nil, "get", "--classic", target(addr, "top.txt"), ".")
	sameFile(t, filepath.Join(ckdir, "top.txt"), filepath.Join(local, "top.txt"))
}

// A one-file send to an existing directory C-Kermit may not enter: its
// "Can't change directory" reads as a missing one, so the file goes as
// a file of that name and is refused; kerf then says the server would
// not change into it (review: only "Write access denied" was said).
// The directory is closed to C-Kermit (run as nobody under root).
func TestSendIntoClosedDirectoryAtCKermitServer(t *testing.T) {
	argv := []string{peertest.RequirePeer(t, "kermit")}
	if os.Geteuid() == 0 {
		// Root enters any directory: C-Kermit runs as nobody.
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Fatalf("setpriv (util-linux) is needed to run C-Kermit as nobody: %v", err)
		}
		argv = append([]string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
	}
	local := t.TempDir()
	// Not under t.TempDir, whose parent only root may enter.
	top, err := os.MkdirTemp("", "kerf-closed-dir")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	ckdir := filepath.Join(top, "srv")
	for _, d := range []string{top, ckdir} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777)
	}
	if err := os.Mkdir(filepath.Join(ckdir, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(local, "a.txt"), []byte("hello\n"))
	port := freePort(t)
	ksc := filepath.Join(top, "s.ksc")
	writeFile(t, ksc, []byte(fmt.Sprintf("set host * %d\nset file type binary\nset file collision overwrite\nserver\nexit 0\n", port)))
	os.Chmod(ksc, 0o644)
	cmd := exec.Command(argv[0], append(argv[1:], ksc, "-Y")...)
	cmd.Dir = ckdir
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); !listening(port); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("C-Kermit does not listen:\n%s", out.String())
		}
	}
	r := run(t, nil, local, nil, "send", "--classic", "a.txt", target(fmt.Sprintf("127.0.0.1:%d", port), "locked"))
	if r.code != 4 || !strings.Contains(r.stderr, "would not change into locked") {
		t.Fatalf("want exit 4 saying the server would not change into locked: %s", r)
	}
}

// Names a get from C-Kermit asks for are taken as it sends them (QA:
// the name check refused a[1].txt, the middle of file[1-3].txt, every
// file of -r HOST//abs/dir/* and those in subdirectories of -r
// dir/*.txt, and {a,b}.txt was said not sent).
func TestKerfGetBracketsAndTreesFromCKermitServer(t *testing.T) {
	ckdir := t.TempDir()
	files := []string{"a[1].txt", "file1.txt", "file2.txt", "file3.txt", "a.txt", "b.txt", "dir/f1.txt", "dir/sub/f2.txt", "dir/sub/f3.log"}
	for i, n := range files {
		writeFile(t, filepath.Join(ckdir, n), randomBytes(1000+i, uint64(80+i)))
	}
	cases := []struct {
		args  []string
		want  []string // as stored here
		wantN int      // files here in all
	}{
		{[]string{"a[1].txt"}, []string{"a[1].txt"}, 1},
		{[]string{"file[1-3].txt"}, []string{"file1.txt", "file2.txt", "file3.txt"}, 3},
		{[]string{"{a,b}.txt"}, []string{"a.txt", "b.txt"}, 2},
		{[]string{"-r", "dir/*.txt"}, []string{"dir/f1.txt", "dir/sub/f2.txt"}, 2},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			local := t.TempDir()
			_, addr := ckermitServer(t, ckdir)
			spec := tc.args[len(tc.args)-1]
			args := append(append([]string{"--classic"}, tc.args[:len(tc.args)-1]...), target(addr, spec), ".")
			r := run(t, nil, local, nil, "get", args...)
			if r.code != 0 {
				t.Fatalf("get %s: %s", spec, r)
			}
			for _, n := range tc.want {
				sameFile(t, filepath.Join(ckdir, n), filepath.Join(local, n))
			}
			n := 0
			filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					n++
				}
				return nil
			})
			if n != tc.wantN {
				t.Errorf("%d files stored, want %d", n, tc.wantN)
			}
		})
	}
	t.Run("absolute", func(t *testing.T) {
		local := t.TempDir()
		_, addr := ckermitServer(t, ckdir)
		r := run(t, nil, local, nil, "get", "--classic", "-r", addr+"/"+filepath.Join(ckdir, "dir/sub")+"/*", ".")
		if r.code != 0 {
			t.Fatalf("get -r HOST//abs/dir/*: %s", r)
		}
		found := false
		filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "f2.txt" {
				found = true
			}
			return nil
		})
		if !found {
			t.Error("f2.txt not stored")
		}
	})
}

// A directory whose name has brackets, at a C-Kermit server: a file in
// it named with the brackets escaped comes (with -r too, where the name
// check took the escapes for a pattern and refused it), and a wildcard
// under it, which C-Kermit would match against d1 as well, is refused
// before anything is asked (QA r: d\[1\]/* fetched d1's file).
func TestKerfGetFromBracketDirAtCKermitServer(t *testing.T) {
	ckdir := t.TempDir()
	writeFile(t, filepath.Join(ckdir, "d[1]/x"), []byte("in d[1]\n"))
	writeFile(t, filepath.Join(ckdir, "d1/x"), []byte("in d1\n"))
	for _, args := range [][]string{nil, {"-r"}} {
		_, addr := ckermitServer(t, ckdir) // one connection each
		local := t.TempDir()
		r := run(t, nil, local, nil, "get", append(append([]string{"--classic"}, args...), target(addr, `d\[1\]/x`), ".")...)
		if r.code != 0 {
			t.Fatalf("get %q d\\[1\\]/x: %s", args, r)
		}
		got := filepath.Join(local, "x")
		if len(args) > 0 {
			got = filepath.Join(local, "d[1]/x")
		}
		if b, err := os.ReadFile(got); err != nil || string(b) != "in d[1]\n" {
			t.Errorf("get %q d\\[1\\]/x: %q, %v", args, b, err)
		}
	}
	local := t.TempDir()
	r := run(t, nil, local, nil, "get", "--classic", target("127.0.0.1:1", `d\[1\]/*`), ".")
	if r.code != 2 || !strings.Contains(r.stderr, "as a pattern") {
		t.Errorf("get d\\[1\\]/* from a classic server: %s; want a usage error", r)
	}
	if ents, _ := os.ReadDir(local); len(ents) != 0 {
		t.Errorf("stored %v", ents)
	}
	// Over a serial link too, once the peer is known to be classic (a
	// kerf serial server takes the escapes: the review).
	ckServer := "cd " + shellQuote(ckdir) + " && script -qec " + shellQuote(shellQuote(peertest.RequirePeer(t, "kermit"))+" -q -x") + " /dev/null"
	r = run(t, nil, local, nil, "serial", "get", "--command", ckServer, "--dir", local, `d\[1\]/*`)
	if r.code == 0 || !strings.Contains(r.stderr, "as a pattern") {
		t.Errorf("serial get d\\[1\\]/* from C-Kermit: %s; want it refused", r)
	}
	if ents, _ := os.ReadDir(local); len(ents) != 0 {
		t.Errorf("stored %v", ents)
	}
	kerfServer := shellQuote(kerfBin) + " serial server --stdio --dir " + shellQuote(ckdir)
	if r := run(t, nil, local, nil, "serial", "get", "--command", kerfServer, "--dir", local, `d\[1\]/*`); r.code != 0 {
		t.Errorf("serial get d\\[1\\]/* from a kerf serial server: %s", r)
	}
	if b, err := os.ReadFile(filepath.Join(local, "x")); err != nil || string(b) != "in d[1]\n" {
		t.Errorf("from a kerf serial server: x holds %q, %v; want d[1]'s", b, err)
	}
	os.Remove(filepath.Join(local, "x"))
	// An escaped space is a name's own: asked for as it is (review).
	writeFile(t, filepath.Join(ckdir, "my dir/f.txt"), []byte("spaced\n"))
	_, addr := ckermitServer(t, ckdir)
	if r := run(t, nil, local, nil, "get", "--classic", target(addr, `my\ dir/*`), "."); r.code != 0 {
		t.Fatalf("get my\\ dir/*: %s", r)
	}
	sameFile(t, filepath.Join(ckdir, "my dir/f.txt"), filepath.Join(local, "f.txt"))
}

// A name given twice is asked for once: a classic server would send it
// twice, and the second copy was refused as another file of that name
// (QA: exit 4).
func TestKerfGetSameNameTwiceFromCKermitServer(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ckdir, "a.txt"), randomBytes(2000, 91))
	_, addr := ckermitServer(t, ckdir)
	r := run(t, nil, local, nil, "get", "--classic", target(addr, "a.txt"), target(addr, "a.txt"), ".")
	if r.code != 0 {
		t.Fatalf("get of one name twice: %s", r)
	}
	sameFile(t, filepath.Join(ckdir, "a.txt"), filepath.Join(local, "a.txt"))
}

// An escaped name cannot be said to a classic server, which takes a
// missing name for a pattern and knows no escapes: rm of one is not
// sent, and the files it would match stay (as they do at a kerf server,
// which is asked to take the name as it is).
func TestKerfRmEscapedNameAtCKermitServerNotSent(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	for _, n := range []string{"data0.tar", "data2.tar"} {
		writeFile(t, filepath.Join(ckdir, n), []byte(n))
	}
	_, addr := ckermitServer(t, ckdir)
	r := run(t, nil, local, nil, "rm", "--classic", target(addr, `data\[2024\].tar`))
	if r.code != 4 || !strings.Contains(r.stderr, "not sent") {
		t.Errorf("rm of an escaped name at C-Kermit: %s", r)
	}
	for _, n := range []string{"data0.tar", "data2.tar"} {
		if _, err := os.Stat(filepath.Join(ckdir, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// A C-Kermit server locked down as they often are: with DISABLE MKDIR a
// send into a directory it has goes (kerf asked to make it first, and
// every such send failed; QA); with DISABLE SEND nothing is sent and
// kerf does not say the file went as a file of the directory's name. A
// GET of a list in braces, {a,b}, which C-Kermit takes for a pattern,
// brings both files and no phantom failure of "a,b" (QA).
func TestKerfWithLockedDownCKermitServer(t *testing.T) {
	local, ckdir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "a.txt"), []byte("hello\n"))
	if err := os.Mkdir(filepath.Join(ckdir, "existing"), 0o755); err != nil {
		t.Fatal(err)
	}
	k, addr := ckermitServer(t, ckdir, "disable mkdir")
	r := run(t, nil, local, nil, "send", "--classic", "a.txt", target(addr, "existing/"))
	if r.code != 0 {
		t.Fatalf("send into an existing directory with DISABLE MKDIR: %s\n--- C-Kermit ---\n%s", r, k.out.String())
	}
	sameFile(t, filepath.Join(local, "a.txt"), filepath.Join(ckdir, "existing/a.txt"))
	_, addr = ckermitServer(t, ckdir, "disable mkdir")
	if r := run(t, nil, local, nil, "send", "--classic", "a.txt", target(addr, "new/")); r.code != 4 || !strings.Contains(r.stderr, "making it") {
		t.Errorf("send into a new directory with DISABLE MKDIR: want exit 4 saying it could not be made: %s", r)
	}

	_, addr = ckermitServer(t, ckdir, "disable send")
	r = run(t, nil, local, nil, "send", "--classic", "a.txt", target(addr, "existing/x.txt"))
	if r.code != 4 || !strings.Contains(r.stderr, "SEND disabled") || strings.Contains(r.stderr, "was sent as a file") {
		t.Errorf("send with DISABLE SEND: %s", r)
	}

	writeFile(t, filepath.Join(ckdir, "b1.dat"), randomBytes(1000, 91))
	writeFile(t, filepath.Join(ckdir, "b2.dat"), randomBytes(1001, 92))
	_, addr = ckermitServer(t, ckdir)
	r = run(t, nil, local, []string{"--json"}, "get", "--classic", target(addr, "{b1.dat,b2.dat}"), "w/")
	if evs := parseEvents(t, r.stdout); r.code != 0 || len(eventsNamed(evs, "file_error")) != 0 || len(eventsNamed(evs, "file_done")) != 2 {
		t.Errorf("get {b1.dat,b2.dat}: %s", r)
	}
	sameFile(t, filepath.Join(ckdir, "b2.dat"), filepath.Join(local, "w/b2.dat"))
}

// A C-Kermit client of a kerf server that does not allow classic
// sessions is told why: C-Kermit writes "kermit -ir" first and empties
// its input before its first packet, so an answer to the text was
// thrown away and its user saw a bare failure (QA). Answered at its
// first packet, the E reaches it.
func TestCKermitClientToldTLSIsRequired(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(local, "up.bin"), randomBytes(1000, 93))
	host, port, _ := net.SplitHostPort(srv.addr)
	plog := filepath.Join(local, "packets.log")
	k := startCKermit(t, local, fmt.Sprintf(`log packets %s
set host %s %s /raw-socket
if fail exit 1 "connect failed"
set file type binary
send up.bin
if fail exit 2 "send failed"`, plog, host, port))
	if code := k.wait(t); code != 2 {
		t.Fatalf("C-Kermit exit %d, want 2 (the send refused):\n%s", code, k.out.String())
	}
	b, err := os.ReadFile(plog)
	if err != nil || !bytes.Contains(b, []byte("this server requires TLS")) {
		t.Errorf("C-Kermit's packet log has no E saying TLS is required (%v):\n%s\n--- C-Kermit ---\n%s", err, b, k.out.String())
	}
	noFile(t, filepath.Join(root, "up.bin"))
}

// C-Kermit's GET of a file the server may not read fails with the
// server's reason in an E packet, as a missing file's does (QA z: an
// empty group came, and C-Kermit failed without a word); a GET of a
// readable file goes on after it. The server runs as nobody, the file
// is root's own, mode 0600.
func TestCKermitGetUnreadableSaysWhy(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(root, "noread.txt"), []byte("secret\n"))
	if err := os.Chmod(filepath.Join(root, "noread.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "ok.txt"), []byte("readable\n"))
	os.Chmod(filepath.Join(root, "ok.txt"), 0o644)
	srv := startServer(t, root, serverOpts{classic: true, uid: 65534})
	k := runCKermitClient(t, srv, local, `get noread.txt
if success exit 2 "get of an unreadable file succeeded"
echo GETFAILED [\v(xfermsg)]
get ok.txt
if fail exit 3 "get failed"
`)
	out := k.out.String()
	if !strings.Contains(out, "GETFAILED [") || !strings.Contains(out, "permission denied") {
		t.Errorf("C-Kermit was not told why the GET failed:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(local, "noread.txt")); err == nil {
		t.Error("noread.txt arrived")
	}
	sameFile(t, filepath.Join(root, "ok.txt"), filepath.Join(local, "ok.txt"))
}
