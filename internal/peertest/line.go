package peertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// SharedDir returns the shared folder that sits beside the repository
// (tools/lineem, reference/): $KERF_SHARED if set, else ../shared or
// ../../shared relative to the directory of the module's go.mod.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir, err := sharedDir()
	if err != nil {
		t.Fatalf("peertest: %v", err)
	}
	return dir
}

func sharedDir() (string, error) {
	if d := os.Getenv("KERF_SHARED"); d != "" {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return "", fmt.Errorf("KERF_SHARED=%s is not a directory", d)
		}
		return d, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	for _, rel := range []string{"../shared", "../../shared"} {
		d := filepath.Clean(filepath.Join(root, rel))
		if st, err := os.Stat(filepath.Join(d, "tools", "lineem")); err == nil && st.IsDir() {
			return d, nil
		}
	}
	return "", fmt.Errorf("shared folder not found at ../shared or ../../shared from %s; set KERF_SHARED", root)
}

// moduleRoot is the directory of the main module's go.mod, asked of the go
// command and, failing that, found by walking up from the working
// directory (tests run in their package directory).
func moduleRoot() (string, error) {
	if out, err := exec.Command("go", "env", "GOMOD").Output(); err == nil {
		if mod := strings.TrimSpace(string(out)); mod != "" && mod != os.DevNull {
			return filepath.Dir(mod), nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

var lineemBuild struct {
	once sync.Once
	path string
	err  error
}

// LineemPath builds lineem from the shared tools folder, once per test
// binary, and returns the binary's path. The binary is cached in the
// temporary directory under a hash of lineem's sources, so later test runs
// reuse it.
func LineemPath(t testing.TB) string {
	t.Helper()
	lineemBuild.once.Do(func() {
		lineemBuild.path, lineemBuild.err = buildLineem()
	})
	if lineemBuild.err != nil {
		t.Fatalf("peertest: build lineem: %v", lineemBuild.err)
	}
	return lineemBuild.path
}

func buildLineem() (string, error) {
	shared, err := sharedDir()
	if err != nil {
		return "", err
	}
	src := filepath.Join(shared, "tools", "lineem")
	h := sha256.New()
	files, _ := filepath.Glob(filepath.Join(src, "*.go"))
	files = append(files, filepath.Join(src, "go.mod"), filepath.Join(src, "go.sum"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	dir := filepath.Join(os.TempDir(), "kerf-lineem-"+hex.EncodeToString(h.Sum(nil))[:16])
	bin := filepath.Join(dir, "lineem")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Build to a private name and rename, so that test binaries of several
	// packages building at once never run a half-written file.
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-buildvcs=false", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %v\n%s", src, err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// StartLineem starts an emulated serial line at baud bits per second
// (baud/10 bytes per second each way), flipping each bit with probability
// ber using noise seed seed, and returns its two pty ends. The line is
// stopped with SIGTERM at test cleanup, and its counters (bytes, flipped
// bits, lost pacing time) are logged.
func StartLineem(t testing.TB, baud int, ber float64, seed int64) (devA, devB string) {
	t.Helper()
	return StartLineemArgs(t,
		"-baud", strconv.Itoa(baud),
		"-ber", strconv.FormatFloat(ber, 'g', -1, 64),
		"-seed", strconv.FormatInt(seed, 10))
}

// StartLineemArgs is StartLineem with lineem's own flags (-baud, -ber,
// -seed, -delay, -burst, -burst-every, -buf, ...); -paths is added here.
func StartLineemArgs(t testing.TB, args ...string) (devA, devB string) {
	t.Helper()
	bin := LineemPath(t)
	paths := filepath.Join(t.TempDir(), "line.paths")
	// lineem's messages go to a file, not a pipe: Wait then depends on the
	// process alone, never on a pipe some other process might still hold.
	errFile, err := os.Create(filepath.Join(t.TempDir(), "lineem.stderr"))
	if err != nil {
		t.Fatalf("peertest: %v", err)
	}
	defer errFile.Close()
	stderr := fileText{errFile.Name()}
	cmd := exec.Command(bin, append([]string{"-paths", paths}, args...)...)
	cmd.Stderr = errFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("peertest: start lineem: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				t.Logf("peertest: lineem (pid %d) did not exit after SIGKILL", cmd.Process.Pid)
			}
		}
		t.Logf("peertest: lineem %s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(paths) // written whole by rename
		if err == nil {
			f := strings.Fields(string(b))
			if len(f) != 2 {
				t.Fatalf("peertest: lineem paths file holds %q", b)
			}
			ClearLineLock(f[0])
			ClearLineLock(f[1])
			return f[0], f[1]
		}
		select {
		case <-exited:
			t.Fatalf("peertest: lineem exited before writing its paths: %s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("peertest: lineem wrote no paths file within 10s: %s", stderr.String())
		}
	}
}

// PtyPair opens a pseudo-terminal for a direct, unpaced connection: the
// program under test opens slavePath (or gets it as stdin/stdout), the test
// reads and writes master. The slave is set raw (8-bit clean, no echo) and
// held open until cleanup, so master never sees EIO while the program
// opens and closes the slave. master is pollable: SetReadDeadline works.
func PtyPair(t testing.TB) (master *os.File, slavePath string) {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		t.Fatalf("peertest: open pty: %v", err)
	}
	if _, err := term.MakeRaw(int(s.Fd())); err != nil {
		m.Close()
		s.Close()
		t.Fatalf("peertest: raw mode on %s: %v", s.Name(), err)
	}
	t.Cleanup(func() {
		m.Close()
		s.Close()
	})
	ClearLineLock(s.Name())
	return m, s.Name()
}

// File is one file of a transfer test.
type File struct {
	Name string
	Data []byte
}

// StandardFiles is the interop test set: an empty file, all 256 byte
// values, a text file (LF lines, a CRLF line, a tab, a form feed, a Latin-1
// and a UTF-8 line), a name with spaces, and, if bigSize > 0, bigSize
// random bytes from seed (named random.bin).
func StandardFiles(bigSize int, seed int64) []File {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	var text bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&text, "line %03d: The quick brown fox jumps over the lazy dog.\n", i)
	}
	text.WriteString("a CRLF line\r\n\ttab, form feed\f, caf\xe9 (Latin-1), café (UTF-8)\n")
	files := []File{
		{Name: "empty", Data: nil},
		{Name: "allbytes.bin", Data: all},
		{Name: "text.txt", Data: text.Bytes()},
		{Name: "name with spaces.dat", Data: []byte("a file whose name has spaces\n")},
	}
	if bigSize > 0 {
		files = append(files, File{Name: "random.bin", Data: RandomBytes(bigSize, seed)})
	}
	return files
}

// RandomBytes returns n pseudo-random bytes, the same for the same seed.
func RandomBytes(n int, seed int64) []byte {
	// xorshift64*: fast, repeatable, good enough to defeat compression and
	// to contain every byte value many times.
	x := uint64(seed)*0x9E3779B97F4A7C15 + 1
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		v := x * 0x2545F4914F6CDD1D
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// WriteFiles writes files into dir.
func WriteFiles(t testing.TB, dir string, files []File) {
	t.Helper()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatalf("peertest: %v", err)
		}
	}
}

// CheckFiles reports a test error for every file of files that is missing
// from dir or differs from what was sent, naming the first differing
// offset. It reports whether all were identical.
func CheckFiles(t testing.TB, dir string, files []File) bool {
	t.Helper()
	ok := true
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Errorf("peertest: %s: %v", f.Name, err)
			ok = false
			continue
		}
		if bytes.Equal(got, f.Data) {
			continue
		}
		ok = false
		i := 0
		for i < len(got) && i < len(f.Data) && got[i] == f.Data[i] {
			i++
		}
		t.Errorf("peertest: %s: received %d bytes, sent %d; first difference at offset %d", f.Name, len(got), len(f.Data), i)
	}
	return ok
}

// fileText reads a log file written by a child process.
type fileText struct{ name string }

func (f fileText) String() string {
	b, _ := os.ReadFile(f.name)
	return string(b)
}
