package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --streams and serve's --max-streams outside 1..datachan.MaxStreams are
// usage errors (exit 2) before anything connects. (Regression: 0 and 100
// were accepted and silently clamped.)
func TestStreamsRange(t *testing.T) {
	t.Setenv("KERF_USER", "")
	t.Setenv("KERF_PASSWORD", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	closed := freePort(t) // nobody listens: a value that passes gets exit 3
	for _, c := range []struct {
		n    string
		code int
	}{{"0", exitUsage}, {"-1", exitUsage}, {"65", exitUsage}, {"100", exitUsage}, {"1", exitConnect}, {"64", exitConnect}} {
		for _, args := range [][]string{
			{"ls", "--streams", c.n, closed + "/x"},
			{"get", "--streams", c.n, closed + "/x", t.TempDir()},
		} {
			code, err := run(ctx, append([]string{"--quiet"}, args...)...)
			if code != c.code || (c.code == exitUsage && !strings.Contains(err.Error(), "--streams")) {
				t.Errorf("kerf %v: exit %d (%v), want %d", args, code, err, c.code)
			}
		}
	}
	for _, n := range []string{"0", "65"} {
		sctx, stop := context.WithTimeout(ctx, 5*time.Second)
		code, err := run(sctx, "serve", "--max-streams", n, "--state", filepath.Join(t.TempDir(), "state"), "--root", t.TempDir(), "--listen", freePort(t), "--anonymous")
		stop()
		if code != exitUsage || err == nil || !strings.Contains(err.Error(), "--max-streams") {
			t.Errorf("serve --max-streams %s: exit %d (%v), want %d", n, code, err, exitUsage)
		}
	}
}
