package serialfallback

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// descendants returns the processes pid started, and those they
// started, found from /proc: the programs a shell ran for a command
// (an ssh, a Kermit), which a signal to the shell alone leaves running.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := make(map[int][]int)
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	for next := []int{pid}; len(next) > 0; {
		p := next[0]
		next = next[1:]
		for _, c := range children[p] {
			out = append(out, c)
			next = append(next, c)
		}
	}
	return out
}

// parentOf reads a process's parent from /proc/PID/stat.
func parentOf(pid int) (int, bool) {
	f, ok := procStat(pid)
	if !ok || len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// procStat returns the fields of /proc/PID/stat after the name (state,
// parent, ...): the name, in parentheses, may itself hold spaces and
// ')'.
func procStat(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(s[i+1:]), true
}

// signalAll signals each of pids.
func signalAll(pids []int, sig syscall.Signal) {
	for _, p := range pids {
		syscall.Kill(p, sig)
	}
}
