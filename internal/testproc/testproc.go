// Package testproc runs a test of the current test binary again, in a
// child process as another user: how a suite that runs as root (CI, this
// machine) checks what an unprivileged server or client sees. For tests
// only.
package testproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Nobody is the user and group id tests run their children as.
const Nobody = 65534

// WorldDir makes a temporary directory anyone may enter and write (mode
// 0777), removed when t ends. t.TempDir will not do: its parents are
// private to root.
func WorldDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// RerunAs runs the test named test of this test binary again, as user
// and group id uid, with env added to the environment, from a copy of
// the binary in dir (a WorldDir: the binary's own directory is private
// to root too). It fails t with the child's output if the child fails.
// The test tells the child apart by an environment variable of env.
func RerunAs(t testing.TB, dir string, uid uint32, test string, env ...string) {
	t.Helper()
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, filepath.Base(os.Args[0]))
	if err := os.WriteFile(copyPath, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(copyPath, "-test.run", "^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s as uid %d: %v\n%s", test, uid, err, out)
	}
}
