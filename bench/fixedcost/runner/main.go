package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Command runner runs a kerf built with bench/fixedcost/marks.patch N
// times and prints, for each run, the milliseconds from its fork to each
// step it marks and to its exit (bench/fixedcost.sh).
//
//	runner N cmd args...
//
// RM, if set, is removed before each run (the copy a send made). The
// child gets its start in KERF_MARKS, so its marks count from the fork,
// before the Go runtime starts, not from its own first line.
func main() {
	n, _ := strconv.Atoi(os.Args[1])
	for i := 0; i < n; i++ {
		if rm := os.Getenv("RM"); rm != "" {
			os.RemoveAll(rm)
		}
		t0 := time.Now()
		cmd := exec.Command(os.Args[2], os.Args[3:]...)
		cmd.Env = append(os.Environ(), "KERF_MARKS="+strconv.FormatInt(t0.UnixNano(), 10))
		errp, _ := cmd.StderrPipe()
		cmd.Start()
		var marks []string
		sc := bufio.NewScanner(errp)
		for sc.Scan() {
			l := sc.Text()
			if strings.HasPrefix(l, "MARK") {
				f := strings.Fields(l)
				marks = append(marks, f[1]+"="+strings.Join(f[3:], "_"))
			} else {
				marks = append(marks, "!"+l)
			}
		}
		cmd.Wait()
		fmt.Printf("%s | exit %.2f\n", strings.Join(marks, " "), float64(time.Since(t0).Microseconds())/1000)
	}
}
