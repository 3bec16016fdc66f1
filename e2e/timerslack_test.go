//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// timerSlack is the timer slack of process pid's main thread, in ns.
func timerSlack(t *testing.T, pid string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", pid, "timerslack_ns"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A server runs with the timer slack --timer-slack asks for (500 µs by
// default), having executed itself again to give it to the threads the
// Go runtime made before kerf's code ran; 0 leaves the one it was given;
// and it still serves, under its own name (ps, pgrep: it was "exe").
func TestServeTimerSlack(t *testing.T) {
	own := timerSlack(t, "self")
	for _, tc := range []struct {
		args []string
		want int64
	}{
		{nil, max(own, 500_000)},
		{[]string{"--timer-slack", "0"}, own},
		{[]string{"--timer-slack", "3ms"}, max(own, 3_000_000)},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			root := t.TempDir()
			srv := startServer(t, root, serverOpts{args: tc.args})
			if got := timerSlack(t, strconv.Itoa(srv.cmd.Process.Pid)); got != tc.want {
				t.Errorf("timer slack %d ns, want %d", got, tc.want)
			}
			want := filepath.Base(kerfBin)
			want = want[:min(len(want), 15)] // the kernel's TASK_COMM_LEN
			pid := strconv.Itoa(srv.cmd.Process.Pid)
			tasks, err := os.ReadDir(filepath.Join("/proc", pid, "task"))
			if err != nil || len(tasks) == 0 {
				t.Fatalf("threads of the server: %v", err)
			}
			for _, task := range append([]os.DirEntry{nil}, tasks...) {
				f := filepath.Join("/proc", pid, "comm")
				if task != nil {
					f = filepath.Join("/proc", pid, "task", task.Name(), "comm")
				}
				if b, err := os.ReadFile(f); err != nil || strings.TrimSpace(string(b)) != want {
					t.Errorf("%s: %q (%v), want %q", f, b, err, want)
				}
			}
			src := filepath.Join(t.TempDir(), "a.bin")
			data := randomBytes(300_000, 7)
			writeFile(t, src, data)
			mustRun(t, srv, t.TempDir(), nil, "send", src, target(srv.addr, ""))
			sameFile(t, src, filepath.Join(root, "a.bin"))
		})
	}
}

// A slack out of bounds is a usage error, said before anything is made.
func TestServeTimerSlackBounds(t *testing.T) {
	for _, v := range []string{"-1ms", "1s"} {
		state := t.TempDir()
		out, err := exec.Command(kerfBin, "serve", "--root", t.TempDir(), "--state", state, "--listen", "127.0.0.1:0", "--timer-slack", v).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--timer-slack "+v) {
			t.Errorf("--timer-slack %s: %v, %q; want exit 2 naming the flag", v, err, out)
		}
		if entries, _ := os.ReadDir(state); len(entries) != 0 {
			t.Errorf("--timer-slack %s: the state directory got %d entries", v, len(entries))
		}
	}
}

// A server profiled with KERF_CPUPROFILE survives executing itself again
// for its timer slack: the profiling timer outlives the execve, and its
// signal killed about one start in four before the profile was stopped
// first (CI). Ten starts, each of which must come to serving.
func TestServeTimerSlackWithProfile(t *testing.T) {
	for i := range 10 {
		prof := filepath.Join(t.TempDir(), fmt.Sprintf("srv%d.pprof", i))
		srv := startServer(t, t.TempDir(), serverOpts{env: []string{"KERF_CPUPROFILE=" + prof}})
		if got := timerSlack(t, strconv.Itoa(srv.cmd.Process.Pid)); got < 500_000 {
			t.Errorf("start %d: timer slack %d ns", i, got)
		}
	}
}
