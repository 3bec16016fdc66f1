package control_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kerf/control"
)

// The server's log records each change a command makes to the tree,
// with the user (QA: rm, rmdir, mkdir and mv left no trace at any
// level), and leaves out, at its usual level, a REMOTE CD that finds no
// such directory: how a send to a new name begins (QA: every such
// upload logged "server command failed").
func TestServerLogsChanges(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs syncBuf
	srv := startServerWith(t, root, func(c *control.ServerConfig) {
		c.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	ctx := ctxT(t)
	cl := dialT(t, ctx, clientConfig(srv, nil))
	for _, c := range [][]string{{"m", "d"}, {"R", "f.txt", "d/g.txt"}, {"E", "d/g.txt"}, {"d", "d"}} {
		if _, err := cl.Generic(ctx, c[0][0], c[1:]...); err != nil {
			t.Fatalf("%q: %v", c, err)
		}
	}
	if _, err := cl.Generic(ctx, 'C', "no-such-dir"); err == nil {
		t.Fatal("CD into a missing directory succeeded")
	}
	cl.Close()
	srv.Close()
	got := logs.String()
	for _, want := range [][2]string{
		{`msg="made directory"`, `user=` + testUser + ` name=d`},
		{`msg=renamed`, `user=` + testUser + ` from=f.txt to=d/g.txt`},
		{`msg=removed`, `user=` + testUser + ` name=d/g.txt`},
		{`msg="removed directory"`, `user=` + testUser + ` name=d`},
	} {
		found := false
		for line := range strings.Lines(got) {
			found = found || strings.Contains(line, want[0]+" ") && strings.Contains(line, want[1])
		}
		if !found {
			t.Errorf("the log has no %s %s:\n%s", want[0], want[1], got)
		}
	}
	if strings.Contains(got, "server command failed") {
		t.Errorf("a CD that found no directory logged as a failure:\n%s", got)
	}
}
