//go:build linux

package serialfallback

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"kerf/internal/peertest"
	"kerf/internal/testproc"
)

// withLockDir points lockDirs at a directory of the test's own and
// returns it. Not for parallel tests: lockDirs is the package's.
func withLockDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	old := lockDirs
	lockDirs = []string{d}
	t.Cleanup(func() { lockDirs = old })
	return d
}

// lockPath is the lock file of the line dev in dir.
func lockPath(t *testing.T, dir, dev string) string {
	t.Helper()
	target, err := filepath.EvalSymlinks(dev)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "LCK.."+filepath.Base(target))
}

func plantLock(t *testing.T, p string, content []byte) {
	t.Helper()
	if err := os.WriteFile(p, content, 0o444); err != nil {
		t.Fatal(err)
	}
}

// An open line holds a lock in C-Kermit's form, naming this process;
// Close removes it.
func TestLineLockTakenAndReleased(t *testing.T) {
	dir := withLockDir(t)
	_, slave := peertest.PtyPair(t)
	lock := lockPath(t, dir, slave)
	l, err := Open(LinkConfig{Device: slave})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(lock)
	if err != nil {
		l.Close()
		t.Fatalf("no lock while the line is open: %v", err)
	}
	if want := fmt.Sprintf("%10d\n", os.Getpid()); string(b) != want {
		t.Errorf("lock holds %q, want %q", b, want)
	}
	if fi, err := os.Stat(lock); err == nil && fi.Mode().Perm() != 0o444 {
		t.Errorf("lock mode %v, want 0444", fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "LTMP.*")); len(left) > 0 {
		t.Errorf("temporary lock files left: %v", left)
	}
	l.Close()
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock still there after Close: %v", err)
	}
}

// A lock naming another live process (PID 1, in ASCII or old UUCP's
// binary int) keeps the line closed, with an error naming the process
// and the lock, which stays.
func TestLineLockRefusesLiveHolder(t *testing.T) {
	dir := withLockDir(t)
	_, slave := peertest.PtyPair(t)
	lock := lockPath(t, dir, slave)
	binaryPID := binary.NativeEndian.AppendUint32(nil, 1)
	for _, content := range [][]byte{[]byte(fmt.Sprintf("%10d\n", 1)), []byte("1\n"), binaryPID} {
		plantLock(t, lock, content)
		l, err := Open(LinkConfig{Device: slave})
		if err == nil {
			l.Close()
			t.Fatalf("lock %q: line opened", content)
		}
		if !errors.Is(err, ErrLineLocked) || !strings.Contains(err.Error(), "process 1 ") || !strings.Contains(err.Error(), lock) {
			t.Errorf("lock %q: error %v, want ErrLineLocked naming process 1 and %s", content, err, lock)
		}
		if b, _ := os.ReadFile(lock); string(b) != string(content) {
			t.Errorf("lock %q became %q", content, b)
		}
		os.Remove(lock)
	}
}

// A lock naming no live process, or nothing readable, is stale: it is
// replaced by this process's.
func TestLineLockReplacesStale(t *testing.T) {
	dir := withLockDir(t)
	_, slave := peertest.PtyPair(t)
	lock := lockPath(t, dir, slave)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	max, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	beyond, _ := strconv.Atoi(strings.TrimSpace(string(max)))
	for _, content := range []string{
		fmt.Sprintf("%10d\n", gone.Process.Pid),
		fmt.Sprintf("%10d\n", beyond+1),
		"not a pid\n",
		"",
	} {
		plantLock(t, lock, []byte(content))
		l, err := Open(LinkConfig{Device: slave})
		if err != nil {
			t.Fatalf("stale lock %q: %v", content, err)
		}
		b, _ := os.ReadFile(lock)
		l.Close()
		if want := fmt.Sprintf("%10d\n", os.Getpid()); string(b) != want {
			t.Errorf("stale lock %q: lock holds %q, want %q", content, b, want)
		}
	}
}

// The lock is named after the device a link leads to, as C-Kermit names
// it, so that two names of one line share one lock.
func TestLineLockThroughSymlink(t *testing.T) {
	dir := withLockDir(t)
	_, slave := peertest.PtyPair(t)
	link := filepath.Join(t.TempDir(), "modem")
	if err := os.Symlink(slave, link); err != nil {
		t.Fatal(err)
	}
	l, err := Open(LinkConfig{Device: link})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := os.Stat(filepath.Join(dir, "LCK.."+filepath.Base(slave))); err != nil {
		t.Errorf("no lock under the device's name: %v", err)
	}
	if _, err := Open(LinkConfig{Device: slave}); err != nil {
		// This process's own lock: allowed (a second Open of one line
		// in one process is the caller's business).
		t.Errorf("second open by the lock's holder: %v", err)
	}
}

// Without a lock directory the line opens unlocked.
func TestLineLockNoLockDir(t *testing.T) {
	old := lockDirs
	lockDirs = []string{filepath.Join(t.TempDir(), "absent")}
	defer func() { lockDirs = old }()
	_, slave := peertest.PtyPair(t)
	l, err := Open(LinkConfig{Device: slave})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}

// A lock held by the process that ran this one (C-Kermit running kerf on
// its own line) is shared, and left to its holder.
func TestLineLockParentsIsShared(t *testing.T) {
	dir := withLockDir(t)
	_, slave := peertest.PtyPair(t)
	lock := lockPath(t, dir, slave)
	mine := fmt.Sprintf("%10d\n", os.Getpid())
	plantLock(t, lock, []byte(mine))
	lockChild(t, slave, dir, "opened")
	if b, _ := os.ReadFile(lock); string(b) != mine {
		t.Errorf("parent's lock became %q", b)
	}

	// The control: a lock of the child's grandparent (not its parent)
	// keeps it out.
	plantLock(t, lock, []byte(fmt.Sprintf("%10d\n", os.Getppid())))
	lockChild(t, slave, dir, "refused")
}

// lockChild runs TestLineLockChild in a child process of this test
// binary, which opens line with lock directory dir and checks that
// the open is refused (ErrLineLocked) or not, as want says.
func lockChild(t *testing.T, line, dir, want string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLineLockChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockChildEnv(line, dir, want)...)
	// The child says it ran: a test name that matched nothing would
	// pass too.
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "lock child checked: "+want) {
		t.Fatalf("child (want %s): %v\n%s", want, err, out)
	}
}

func lockChildEnv(line, dir, want string) []string {
	return []string{"KERF_LOCK_CHILD_LINE=" + line, "KERF_LOCK_CHILD_DIR=" + dir, "KERF_LOCK_CHILD_WANT=" + want}
}

// TestLineLockChild is the child process of lockChild and of
// TestLineLockAsAnotherUser.
func TestLineLockChild(t *testing.T) {
	line := os.Getenv("KERF_LOCK_CHILD_LINE")
	if line == "" {
		t.Skip("run by lockChild and TestLineLockAsAnotherUser")
	}
	lockDirs = []string{os.Getenv("KERF_LOCK_CHILD_DIR")}
	l, err := Open(LinkConfig{Device: line})
	switch want := os.Getenv("KERF_LOCK_CHILD_WANT"); {
	case want == "refused" && !errors.Is(err, ErrLineLocked):
		t.Fatalf("open: %v, want ErrLineLocked", err)
	case want == "opened" && err != nil:
		t.Fatalf("open: %v, want the line opened", err)
	}
	if l != nil {
		l.Close()
	}
	fmt.Println("lock child checked:", os.Getenv("KERF_LOCK_CHILD_WANT"))
}

// As a user other than the lock's holder: a lock naming another user's
// live process (PID 1: kill answers EPERM) keeps the line closed, and a
// lock directory this user may not write leaves the line unlocked
// rather than closed.
func TestLineLockAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as another user")
	}
	_, slave := peertest.PtyPair(t)
	if err := os.Chown(slave, testproc.Nobody, testproc.Nobody); err != nil {
		t.Fatal(err)
	}
	world := testproc.WorldDir(t, "kerf-linelock-")
	locks := filepath.Join(world, "locks")
	if err := os.Mkdir(locks, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(locks, 0o777)
	plantLock(t, lockPath(t, locks, slave), []byte(fmt.Sprintf("%10d\n", 1)))
	testproc.RerunAs(t, world, testproc.Nobody, "TestLineLockChild", lockChildEnv(slave, locks, "refused")...)

	closed := filepath.Join(world, "closed")
	if err := os.Mkdir(closed, 0o755); err != nil {
		t.Fatal(err)
	}
	testproc.RerunAs(t, world, testproc.Nobody, "TestLineLockChild", lockChildEnv(slave, closed, "opened")...)
	if left, _ := os.ReadDir(closed); len(left) > 0 {
		t.Errorf("files in a lock directory the user may not write: %v", left)
	}
}

// parseLockPID reads whatever another program left in a lock file: it
// never panics, never returns a negative ID, and reads back every ID
// written in C-Kermit's form.
func FuzzParseLockPID(f *testing.F) {
	for _, s := range []string{"      2058\n", "1\n", "\x01\x00\x00\x00", "", "abc", " -5\n", "99999999999999999999\n", "\xff\xff\xff\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if pid := parseLockPID(b); pid < 0 {
			t.Fatalf("parseLockPID(%q) = %d", b, pid)
		}
		if len(b) >= 4 {
			n := int(binary.NativeEndian.Uint32(b) & 0x3fffffff)
			if n == 0 {
				return
			}
			if got := parseLockPID(fmt.Appendf(nil, "%10d\n", n)); got != n {
				t.Fatalf("HDB lock of %d read as %d", n, got)
			}
		}
	})
}
