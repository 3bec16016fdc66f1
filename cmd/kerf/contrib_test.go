package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// unitFile reads a systemd unit's Key=Value lines (the last of a key).
func unitFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kv := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			kv[k] = v
		}
	}
	return kv
}

// The shipped service unit's command line starts a server (its flags
// are kerf's, its paths stand in by temporary ones), and its restart and
// stop settings agree with kerf's exit codes and --drain: a flag renamed
// or an exit code changed fails here, not on an operator's host.
func TestServiceUnitStartsAServer(t *testing.T) {
	unit := unitFile(t, filepath.Join("..", "..", "contrib", "kerf.service"))
	args := strings.Fields(unit["ExecStart"])
	if len(args) < 2 || filepath.Base(args[0]) != "kerf" || args[1] != "serve" {
		t.Fatalf("ExecStart %q: want kerf serve ...", unit["ExecStart"])
	}
	tmp := t.TempDir()
	stand := map[string]string{
		"--state": filepath.Join(tmp, "state"), "--root": t.TempDir(),
		"--listen": "127.0.0.1:0", "--xferlog": filepath.Join(tmp, "xferlog"),
	}
	var drain time.Duration
	args = args[1:]
	for i := 0; i < len(args); i++ {
		if v, ok := stand[args[i]]; ok && i+1 < len(args) {
			args[i+1] = v
		}
		if args[i] == "--drain" && i+1 < len(args) {
			d, err := time.ParseDuration(args[i+1])
			if err != nil {
				t.Fatalf("--drain %q: %v", args[i+1], err)
			}
			drain = d
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if code, err := run(ctx, args...); code != 0 {
		t.Errorf("kerf %s: exit %d, %v", strings.Join(args, " "), code, err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "state", "key.pem")); err != nil {
		t.Errorf("no server key made in the state directory: %v", err)
	}
	// Go's panics exit 2, kerf's usage code: a unit that kept 2 from
	// restarting would leave a crashed server down (review 56). A wrong
	// configuration's restarts are bounded by the start limit instead.
	for _, code := range strings.Fields(unit["RestartPreventExitStatus"]) {
		if code == strconv.Itoa(exitUsage) {
			t.Errorf("RestartPreventExitStatus=%s: a panic exits %d too, and would not be restarted", unit["RestartPreventExitStatus"], exitUsage)
		}
	}
	interval, err1 := time.ParseDuration(strings.ReplaceAll(unit["StartLimitIntervalSec"], "min", "m"))
	restart, err2 := time.ParseDuration(unit["RestartSec"])
	burst, err3 := strconv.Atoi(unit["StartLimitBurst"])
	if err1 != nil || err2 != nil || err3 != nil || time.Duration(burst)*restart >= interval {
		t.Errorf("StartLimitIntervalSec=%s, StartLimitBurst=%s, RestartSec=%s: want a burst of restarts that fits the interval, so that a server that cannot start is given up on", unit["StartLimitIntervalSec"], unit["StartLimitBurst"], unit["RestartSec"])
	}
	stop, err := time.ParseDuration(strings.ReplaceAll(unit["TimeoutStopSec"], "min", "m"))
	if err != nil || stop <= drain {
		t.Errorf("TimeoutStopSec=%s (%v): want it above --drain %v, so that the stop's timeout does not cut the drain", unit["TimeoutStopSec"], err, drain)
	}
}
