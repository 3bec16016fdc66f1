package control_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/control"
	"kerf/filestore"
	"kerf/kermit"
)

// The server's log records each change a command makes to the tree,
// with the user (QA: rm, rmdir, mkdir and mv left no trace at any
// level), a pattern's files one by one (QA: the pattern), and leaves out, at its usual level, a REMOTE CD that finds no
// such directory: how a send to a new name begins (QA: every such
// upload logged "server command failed").
func TestServerLogsChanges(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"f.txt", "x.1", "y.1"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv, logs := loggingServer(t, root)
	ctx := ctxT(t)
	cl := dialT(t, ctx, clientConfig(srv, nil))
	for _, c := range [][]string{{"m", "d"}, {"R", "f.txt", "d/g.txt"}, {"E", "d/g.txt"}, {"d", "d"}, {"E", "*.1"}} {
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
		// A pattern's files, each by its name.
		{`msg=removed`, `user=` + testUser + ` name=x.1`},
		{`msg=removed`, `user=` + testUser + ` name=y.1`},
	} {
		found := false
		for line := range strings.Lines(got) {
			found = found || strings.Contains(line, want[0]+" ") && strings.Contains(line, want[1])
		}
		if !found {
			t.Errorf("the log has no %s %s:\n%s", want[0], want[1], got)
		}
	}
	if strings.Contains(got, `name="*.1"`) {
		t.Errorf("the pattern logged, not the files it removed:\n%s", got)
	}
	if strings.Contains(got, "server command failed") {
		t.Errorf("a CD that found no directory logged as a failure:\n%s", got)
	}
}

// A session's end line says what it moved and how long it took, and a
// GET of a name not there is logged with its command (QA: the end said
// nothing of the files, a failed GET was logged only at debug level,
// and every clean end carried "err=<nil>").
func TestServerLogsWhatSessionsMoved(t *testing.T) {
	root := t.TempDir()
	got := []byte("fetched back")
	if err := os.WriteFile(filepath.Join(root, "there.txt"), got, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, logs := loggingServer(t, root)
	ctx := ctxT(t)
	cl := dialT(t, ctx, clientConfig(srv, nil))
	sent := bytes.Repeat([]byte("kerf"), 25_000)
	if err := cl.Send(ctx, []kermit.OutgoingFile{memFile("up.bin", sent)}); err != nil {
		t.Fatal(err)
	}
	getInto(t, ctx, cl, t.TempDir(), "there.txt", got)
	store, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := cl.Get(ctx, "not-there.txt", false, store); err == nil {
		t.Fatal("a GET of a missing file succeeded")
	}
	cl.Close()
	// The session ends once it reads the close.
	for i := 0; !strings.Contains(logs.String(), `msg="session end"`); i++ {
		if i == 2000 {
			t.Fatalf("no session end logged 20 s after the client closed:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	srv.Close()
	var end, failed string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, `msg="session end"`) {
			end = line
		}
		if strings.Contains(line, `msg="server command failed"`) {
			failed = line
		}
	}
	for _, want := range []string{"user=" + testUser, "seconds=", "files_received=1 bytes_received=100000", "files_sent=1 bytes_sent=12"} {
		if !strings.Contains(end, want) {
			t.Errorf("the session's end line has no %q: %q", want, end)
		}
	}
	if strings.Contains(end, "err=") {
		t.Errorf("a clean session's end line carries an error: %q", end)
	}
	if !strings.Contains(failed, `command=GET`) || !strings.Contains(failed, "not-there.txt") {
		t.Errorf("the failed GET is logged as %q", failed)
	}
}

// loggingServer starts a server on root whose log, at info, is kept.
func loggingServer(t *testing.T, root string) (*control.Server, *syncBuf) {
	t.Helper()
	logs := &syncBuf{}
	srv := startServerWith(t, root, func(c *control.ServerConfig) {
		c.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	return srv, logs
}
