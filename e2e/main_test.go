package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kerfBin is the kerf binary built by TestMain.
var kerfBin string

// features are the optional flags the binary has (probed from --help).
var features struct {
	serveState   bool // serve --state DIR, with `kerf user add`
	allowClassic bool // serve --allow-classic
	servePlain   bool // serve --plain-data
	clientState  bool // send --state DIR
	acceptNewKey bool // send --accept-new-host-key
	clientPlain  bool // send --plain-data
	keyLogin     bool // kerf key, send --identity, user add --key
}

// commandTimeout bounds every kerf run, so a hang fails the test instead
// of the whole package. It is a safety net, not a performance threshold.
const commandTimeout = 2 * time.Minute

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kerf-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		// KERF_E2E_BIN runs the tests against a binary built elsewhere
		// (another commit, a release); by default the tree is built.
		kerfBin = os.Getenv("KERF_E2E_BIN")
		if kerfBin == "" {
			kerfBin = filepath.Join(dir, "kerf")
			build := exec.Command("go", "build", "-o", kerfBin, "kerf/cmd/kerf")
			build.Stdout, build.Stderr = os.Stderr, os.Stderr
			if err := build.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "e2e: building kerf:", err)
				return 1
			}
		}
		serve := helpText("serve")
		send := helpText("send")
		features.serveState = strings.Contains(serve, "--state")
		features.allowClassic = strings.Contains(serve, "--allow-classic")
		features.servePlain = strings.Contains(serve, "--plain-data")
		features.clientState = strings.Contains(send, "--state")
		features.acceptNewKey = strings.Contains(send, "--accept-new-host-key")
		features.clientPlain = strings.Contains(send, "--plain-data")
		features.keyLogin = strings.Contains(send, "--identity") && strings.Contains(helpText("user", "add"), "--key")
		return m.Run()
	}()
	os.Exit(code)
}

func helpText(sub ...string) string {
	out, _ := exec.Command(kerfBin, append(sub, "--help")...).CombinedOutput()
	return string(out)
}

// --- the one place where kerf command lines are made ---------------------

// The password has no spaces: C-Kermit sends REMOTE LOGIN arguments
// with their braces, so it cannot give a password with spaces.
const (
	testUser     = "e2e"
	testPassword = "CorrectHorseBatteryStaple42"
)

// serverOpts describe a kerf server for one test.
type serverOpts struct {
	host    string // listen host, default 127.0.0.1
	classic bool   // C-Kermit will connect: allow classic sessions
	plain   bool   // the test reads data frames: no TLS on the data connections
	env     []string
	args    []string // more serve flags
	wrap    []string // a command the server runs under (ip netns exec NS)
	// uid, if not 0, is the user (and group) the server runs as: its
	// state directory is made that user's, and the directories above
	// its root and state searchable.
	uid int
}

// serverArgs returns the argv (after the binary) of `kerf serve`, and
// prepares what the security layer needs (a state directory and a user
// whose root is root) when the binary has it.
func serverArgs(t *testing.T, root string, o serverOpts) []string {
	t.Helper()
	host := o.host
	if host == "" {
		host = "127.0.0.1"
	}
	// Sessions are logged at info (waitLogLine reads them).
	args := []string{"--log-level", "info", "serve", "--root", root, "--listen", host + ":0", "--data-listen", host + ":0"}
	if features.serveState {
		state := t.TempDir()
		args = append(args, "--state", state)
		add := exec.Command(kerfBin, "user", "add", "--root", root, "--password-stdin", "--state", state, testUser)
		add.Stdin = strings.NewReader(testPassword + "\n")
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("kerf user add: %v\n%s", err, out)
		}
	}
	if o.classic && features.allowClassic {
		args = append(args, "--allow-classic")
	}
	if o.plain && features.servePlain {
		args = append(args, "--plain-data")
	}
	return append(args, o.args...)
}

// clientInvocation returns the argv and environment of a kerf client
// command: global flags (e.g. --json), the subcommand, the security flags
// for srv (none when srv is nil: the peer is C-Kermit), then args.
func clientInvocation(t *testing.T, srv *server, global []string, sub string, args ...string) (argv, env []string) {
	t.Helper()
	argv = append(append([]string{}, global...), sub)
	home := t.TempDir()
	env = append(os.Environ(), "HOME="+home, "KERF_USER=", "KERF_PASSWORD=")
	if srv != nil && features.serveState {
		env = append(env, "KERF_USER="+testUser, "KERF_PASSWORD="+testPassword)
		if features.clientState {
			argv = append(argv, "--state", srv.clientState)
		}
		if features.acceptNewKey {
			argv = append(argv, "--accept-new-host-key")
		}
		if srv.plain && features.clientPlain {
			argv = append(argv, "--plain-data")
		}
	}
	return append(argv, args...), env
}

// ckermitLogin is what a C-Kermit client script must say after connecting
// to a kerf server: REMOTE LOGIN when the server has accounts.
func ckermitLogin() string {
	if !features.serveState {
		return ""
	}
	return fmt.Sprintf("remote login %s %s\nif fail exit 9 \"login failed\"\n", testUser, testPassword)
}

// --- running kerf ----------------------------------------------------------

type server struct {
	addr        string // control address
	dataAddr    string
	root        string
	plain       bool
	state       string // the server's --state, if it has one
	clientState string
	cmd         *exec.Cmd
	stderr      *syncBuffer
	done        chan struct{}
}

var servingLine = regexp.MustCompile(`serving .* on (\S+) \(data (\S+)\)`)

// startServer runs `kerf serve` on root until the test ends.
func startServer(t *testing.T, root string, o serverOpts) *server {
	t.Helper()
	s := &server{root: root, plain: o.plain, clientState: t.TempDir(), stderr: &syncBuffer{}, done: make(chan struct{})}
	args := serverArgs(t, root, o)
	for i, a := range args[:len(args)-1] {
		if a == "--state" {
			s.state = args[i+1]
		}
	}
	s.cmd = exec.Command(kerfBin, args...)
	if len(o.wrap) > 0 {
		s.cmd = exec.Command(o.wrap[0], append(append(o.wrap[1:], kerfBin), args...)...)
	}
	s.cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir()), o.env...)
	s.cmd.Stderr = s.stderr
	// A session of its own, as a service's: no controlling terminal,
	// whatever the test's (a server with one stops on SIGHUP).
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if o.uid != 0 {
		runsAs(t, o.uid, root, s.state)
		s.cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.uid)}
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("kerf serve stderr:\n%s", s.stderr.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := servingLine.FindStringSubmatch(s.stderr.String()); m != nil {
			s.addr, s.dataAddr = m[1], m[2]
			return s
		}
		select {
		case <-s.done:
			t.Fatalf("kerf serve exited: %v\n%s", s.cmd.ProcessState, s.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("kerf serve did not say where it listens:\n%s", s.stderr.String())
		}
	}
}

// runsAs readies root and state for a server that runs as uid: the
// directories above them searchable, state uid's own.
func runsAs(t *testing.T, uid int, root, state string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("a server as user %d needs the tests run as root", uid)
	}
	for _, d := range []string{filepath.Dir(kerfBin), filepath.Dir(root), root, filepath.Dir(state)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if state == "" {
		return
	}
	err := filepath.WalkDir(state, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitLogLine waits for the server to log a line containing s, and
// returns the first such line.
func waitLogLine(t *testing.T, srv *server, s string) string {
	t.Helper()
	var line string
	waitFor(t, fmt.Sprintf("the server to log %q", s), func() bool {
		for _, l := range strings.Split(srv.stderr.String(), "\n") {
			if strings.Contains(l, s) {
				line = l
				return true
			}
		}
		return false
	})
	return line
}

// target is "ADDR/PATH" for the server (ADDR may be a proxy's).
func target(addr, p string) string { return addr + "/" + strings.TrimPrefix(p, "/") }

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout ---\n%s--- stderr ---\n%s", r.code, r.stdout, r.stderr)
}

// kerfCmd prepares a kerf client command against srv (nil: a non-kerf
// peer) in directory dir.
func kerfCmd(t *testing.T, ctx context.Context, srv *server, dir string, global []string, sub string, args ...string) *exec.Cmd {
	t.Helper()
	argv, env := clientInvocation(t, srv, global, sub, args...)
	cmd := exec.CommandContext(ctx, kerfBin, argv...)
	cmd.Env = env
	cmd.Dir = dir
	return cmd
}

// run runs a kerf client command to completion.
func run(t *testing.T, srv *server, dir string, global []string, sub string, args ...string) result {
	t.Helper()
	return runWithInput(t, srv, dir, nil, global, sub, args...)
}

// runWithInput is run with in as the command's standard input (nil:
// none).
func runWithInput(t *testing.T, srv *server, dir string, in io.Reader, global []string, sub string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, dir, global, sub, args...)
	cmd.Stdin = in
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	r := resultOf(t, sub, cmd.Run(), &out, &errb)
	if ctx.Err() != nil {
		t.Fatalf("kerf %s did not finish within %v:\n%s", sub, commandTimeout, r)
	}
	return r
}

// resultOf is how a kerf command that ended with err, writing out and
// errb, went: its exit code and output. An error that is no exit
// status (the command could not start) fails the test.
func resultOf(t *testing.T, sub string, err error, out, errb *bytes.Buffer) result {
	t.Helper()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("kerf %s: %v", sub, err)
	}
	return r
}

// mustRun runs a command that must succeed.
func mustRun(t *testing.T, srv *server, dir string, global []string, sub string, args ...string) result {
	t.Helper()
	r := run(t, srv, dir, global, sub, args...)
	if r.code != 0 {
		t.Fatalf("kerf %s %s: %s", sub, strings.Join(args, " "), r)
	}
	return r
}

// event is one --json line.
type event struct {
	Event   string   `json:"event"`
	Name    string   `json:"name"`
	Size    *int64   `json:"size"`
	Bytes   int64    `json:"bytes"`
	Offset  int64    `json:"offset"`
	Kept    int64    `json:"kept"` // file_done: of bytes, what the receiver had past offset
	Seconds float64  `json:"seconds"`
	Stalled float64  `json:"stalled_seconds"` // progress: nothing moved for this long
	CRC32C  string   `json:"crc32c"`
	Error   string   `json:"error"`
	Reason  string   `json:"reason"`
	Rate    *float64 `json:"bytes_per_second"`
	// done, with --compress: the data bytes as they travelled.
	WireBytes int64  `json:"wire_bytes"`
	NameB64   string `json:"name_base64"`
	// done: what carried the data (quic, tls, tcp), and how many files.
	Data  string `json:"data"`
	Files *int   `json:"files"`
	// file_done, file_saved: an earlier file_error of the name no
	// longer holds.
	Withdrawn bool `json:"error_withdrawn"`
	// ls: an "entry" per file, or one "listing" with the text.
	Path     string `json:"path"`
	Type     string `json:"type"`
	Mode     string `json:"mode"`
	Modified string `json:"modified"`
	Text     string `json:"text"`
}

// parseEvents decodes --json output strictly: every line one JSON object
// with only known fields and a known event name.
func parseEvents(t *testing.T, stdout string) []event {
	t.Helper()
	return decodeLines(t, stdout, func(e event) string { return e.Event },
		"file_start", "progress", "file_done", "file_saved", "file_skipped", "file_error", "done", "error", "entry", "listing", "reconnecting", "source_removed", "source_kept")
}

// decodeLines decodes --json output strictly into T: every line one JSON
// object with only T's fields, whose event (name gives it) is one of
// known.
func decodeLines[T any](t *testing.T, stdout string, name func(T) string, known ...string) []T {
	t.Helper()
	var evs []T
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		var e T
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("--json line %q: %v", sc.Text(), err)
		}
		if dec.More() {
			t.Fatalf("--json line %q holds more than one value", sc.Text())
		}
		if !slices.Contains(known, name(e)) {
			t.Fatalf("--json line %q: unknown event %q", sc.Text(), name(e))
		}
		evs = append(evs, e)
	}
	return evs
}

func eventsNamed(evs []event, kind string) []event {
	var out []event
	for _, e := range evs {
		if e.Event == kind {
			out = append(out, e)
		}
	}
	return out
}

// --- files -------------------------------------------------------------------

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for k := 0; k < 8; k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sameFile compares two files byte for byte, in chunks, and reports the
// first difference.
func sameFile(t *testing.T, want, got string) {
	t.Helper()
	fw, err := os.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	fg, err := os.Open(got)
	if err != nil {
		t.Fatalf("expected file: %v", err)
	}
	defer fg.Close()
	sw, _ := fw.Stat()
	sg, _ := fg.Stat()
	if sw.Size() != sg.Size() {
		t.Fatalf("%s: size %d, want %d (as %s)", got, sg.Size(), sw.Size(), want)
	}
	bw := make([]byte, 1<<20)
	bg := make([]byte, 1<<20)
	for off := int64(0); ; {
		n, errw := io.ReadFull(fw, bw)
		m, errg := io.ReadFull(fg, bg)
		if n != m {
			t.Fatalf("%s: short read at %d", got, off)
		}
		if !bytes.Equal(bw[:n], bg[:m]) {
			for i := range n {
				if bw[i] != bg[i] {
					t.Fatalf("%s differs from %s at byte %d (%#02x, want %#02x)", got, want, off+int64(i), bg[i], bw[i])
				}
			}
		}
		off += int64(n)
		if errw != nil || errg != nil {
			if (errw == io.EOF || errw == io.ErrUnexpectedEOF) && (errg == io.EOF || errg == io.ErrUnexpectedEOF) {
				return
			}
			t.Fatalf("comparing %s: %v / %v", got, errw, errg)
		}
	}
}

// noFile asserts that p does not exist.
func noFile(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s should not exist (lstat: %v)", p, err)
	}
}

func partName(p string) string {
	return filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".kerf-part")
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// freePort returns a TCP port nobody listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	// Free on every address: a peer told the port may listen on all of
	// them (C-Kermit's "set host * PORT"), and so collide with a
	// listener on another loopback address that 127.0.0.1:0 would miss.
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fileCRC32C is the CRC-32C (Castagnoli) of the file at p, as 8 hex digits.
func fileCRC32C(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// checkCRC asserts that a file_done event's crc32c, if present, is the
// CRC-32C of the whole file at p.
func checkCRC(t *testing.T, d event, p string) {
	t.Helper()
	if d.CRC32C == "" {
		return
	}
	if want := fileCRC32C(t, p); d.CRC32C != want {
		t.Errorf("file_done for %s says crc32c %s; the file's CRC-32C is %s", d.Name, d.CRC32C, want)
	}
}
