//go:build unix

package serialfallback

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDirs are where UUCP lock files live (FHS: /var/lock; on most
// systems today a link to /run/lock). A lock is looked for in each and
// made in the first that exists.
var lockDirs = []string{"/var/lock", "/run/lock"}

// lineLock is the UUCP lock file (LCK..NAME, the process ID in ASCII,
// ten columns and a newline: the HDB format C-Kermit, minicom and lockdev
// write) kerf holds for a line it has open, so that two programs never
// read one line's bytes between them: each would see half of the other's
// packets. A nil *lineLock holds nothing.
type lineLock struct {
	path string
}

// lockLine takes device's lock. A lock naming a live process other than
// this one and its parent (a C-Kermit that ran kerf on its own line
// keeps its lock) is refused with ErrLineLocked; one naming no live
// process, or nothing readable, is stale and replaced. Where no lock
// directory exists or kerf may not write in it the line is opened
// unlocked: a lock is a courtesy between programs, and a user who may
// open the device must not be kept from it by the lock directory's
// permissions.
func lockLine(device string) (*lineLock, error) {
	target, err := filepath.EvalSymlinks(device)
	if err != nil {
		return nil, nil // Open reports the missing device
	}
	name := "LCK.." + filepath.Base(target)
	self := os.Getpid()
	parent := os.Getppid()
	if parent <= 1 {
		parent = -1 // init or a reaper adopted us: nobody's line to share
	}
	var dirs []string
	seen := map[string]bool{}
	for _, d := range lockDirs {
		real, err := filepath.EvalSymlinks(d)
		if err != nil || seen[real] {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			continue
		}
		seen[real] = true
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		pid, ok := readLockPID(p)
		switch {
		case !ok:
			continue // no lock, or stale and removed
		case pid == self || pid == parent:
			return nil, nil // held by this process or the one that ran it
		default:
			return nil, lockedErr(device, p, pid)
		}
	}
	if len(dirs) == 0 {
		return nil, nil
	}
	// Made under a name of its own and linked into place, so that a
	// reader never finds it half written and two takers cannot both win.
	d := dirs[0]
	p := filepath.Join(d, name)
	tmp := filepath.Join(d, fmt.Sprintf("LTMP.%d", self))
	os.Remove(tmp) // one left by an earlier process of this ID is read-only
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%10d\n", self), 0o444); err != nil {
		os.Remove(tmp)
		return nil, nil // the directory is not ours to write: unlocked
	}
	defer os.Remove(tmp)
	for range 3 {
		err := os.Link(tmp, p)
		if err == nil {
			return &lineLock{path: p}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, nil
		}
		// Taken between the look and the link.
		switch pid, ok := readLockPID(p); {
		case ok && (pid == self || pid == parent):
			return nil, nil
		case ok:
			return nil, lockedErr(device, p, pid)
		}
	}
	return nil, fmt.Errorf("%w: %s: its lock %s keeps changing", ErrLineLocked, device, p)
}

// readLockPID returns the live process a lock file names. A lock that
// names none (the process is gone, or the file holds no process ID) is
// removed and reported absent.
func readLockPID(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid := parseLockPID(b)
	if pid > 0 && processAlive(pid) {
		return pid, true
	}
	os.Remove(path)
	return 0, false
}

// parseLockPID reads the process ID of a lock file: ASCII (HDB, the
// usual) or, in four bytes that are not all digits and spaces, the binary
// int of old UUCP. 0 when it holds neither.
func parseLockPID(b []byte) int {
	if len(b) == 4 && bytes.IndexFunc(b, func(r rune) bool { return !strings.ContainsRune(" 0123456789\n", r) }) >= 0 {
		return max(int(int32(binary.NativeEndian.Uint32(b))), 0)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// processAlive reports whether pid names a process: one another user
// owns answers EPERM, and is alive too.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func lockedErr(device, lock string, pid int) error {
	who := fmt.Sprintf("process %d", pid)
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		who += " (" + strings.TrimSpace(string(comm)) + ")"
	}
	return fmt.Errorf("%w: %s is locked by %s (lock file %s; remove it only if that process is not using the line)", ErrLineLocked, device, who, lock)
}

// release removes the lock if it is still this process's.
func (l *lineLock) release() {
	if l == nil {
		return
	}
	if b, err := os.ReadFile(l.path); err == nil && parseLockPID(b) == os.Getpid() {
		os.Remove(l.path)
	}
}
