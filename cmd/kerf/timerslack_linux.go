package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerSlackEnv marks a kerf serve that re-executed itself to take a
// timer slack, so that it does so at most once. Its value is the
// process's name (comm) before, which the new image takes back.
const timerSlackEnv = "KERF_TIMER_SLACK_SET"

// raiseTimerSlack gives every thread of this server a timer slack of at
// least want (docs/architecture.md, "A server's timer slack"). The slack
// is per thread, and Go's sysmon thread, the one whose 20 µs sleeps it
// is for, exists before any of kerf's code runs; a thread cannot set
// another's without CAP_SYS_NICE. So the slack is set on this thread and
// kerf executed again from it: the new image's threads all inherit it.
// It returns only when it did not re-execute (nothing to do, or a
// failure, said on stderr: the server then runs as it would have), or
// when ctx ended meanwhile (a signal the new image would not see).
func raiseTimerSlack(ctx context.Context, want time.Duration) {
	name, again := os.LookupEnv(timerSlackEnv)
	os.Unsetenv(timerSlackEnv)
	if again {
		nameThreads(name)
	}
	if want <= 0 || !mayExecAgain {
		return
	}
	cur, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || time.Duration(cur) >= want || again {
		// Already as slack (a systemd TimerSlackNSec=, or the
		// re-executed image), or the kernel did not keep it.
		return
	}
	// prctl sets the calling thread's slack, and execve keeps the
	// calling thread's: both on one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(want), 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "kerf: --timer-slack: %v; serving with the system's\n", err)
		return
	}
	if ctx.Err() != nil {
		return
	}
	// A CPU profile (KERF_CPUPROFILE) runs a SIGPROF timer, and a
	// SIGPROF due or pending at the execve kills the new image before
	// its runtime takes the signal (CI: "profiling timer expired"). The
	// profile is stopped and a pending signal dropped; the new image
	// profiles from its own start, into the same file.
	pprof.StopCPUProfile()
	ignoreSIGPROF()
	// The kernel names the new image after the path executed, "exe"
	// here (QA: pgrep, ps -C and top lost the server), so it is told
	// its name.
	name = "kerf"
	if b, err := os.ReadFile("/proc/self/comm"); err == nil {
		name = strings.TrimSuffix(string(b), "\n")
	}
	err = syscall.Exec("/proc/self/exe", os.Args, append(os.Environ(), timerSlackEnv+"="+name))
	// Only on failure: this thread's slack stays, the others' do not.
	fmt.Fprintf(os.Stderr, "kerf: --timer-slack: executing kerf again: %v; serving with the system's\n", err)
}

// nameThreads gives every thread of this process name as its comm, the
// name ps, pgrep and top show; the main thread's is the process's. A
// thread takes its maker's name, so a pass repeats while the runtime
// made one meanwhile. A failure leaves "exe", which is only cosmetic.
func nameThreads(name string) {
	if name == "" {
		return
	}
	for range 5 {
		renamed := false
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, t := range tasks {
			f := "/proc/self/task/" + t.Name() + "/comm"
			if b, err := os.ReadFile(f); err == nil && strings.TrimSuffix(string(b), "\n") != name {
				os.WriteFile(f, []byte(name), 0)
				renamed = true
			}
		}
		if !renamed {
			return
		}
	}
}

// ignoreSIGPROF sets SIGPROF to SIG_IGN behind the runtime's back (its
// signal.Ignore leaves SIGPROF alone), which drops one pending; only
// just before an execve, whose new image installs its own handler.
func ignoreSIGPROF() {
	// The kernel's struct sigaction (all but MIPS): the handler first,
	// then flags, restorer and mask, all zero here.
	var sa struct {
		handler, flags, restorer uintptr
		mask                     uint64
	}
	sa.handler = 1 // SIG_IGN
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGPROF), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0)
}
