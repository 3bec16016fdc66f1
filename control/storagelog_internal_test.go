package control

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
)

// At the default level (warn), the engine's info records of a file the
// server's storage failed come out as warnings; its other info records
// (a name refused, a partial that differs) stay below the level.
func TestStorageFailuresLoggedAsWarnings(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(sessionLogHandler{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}), nil}).With("peer", "192.0.2.1:5000")
	full := fmt.Errorf("filestore: a.bin needs 10 bytes, 5 are free: %w", syscall.ENOSPC)
	log.Info("refusing file", "name", "a.bin", "err", full)
	log.Info("file not stored", "name", "b.bin", "err", fmt.Errorf("write: %w", syscall.EIO))
	log.Info("refusing file", "name", "e.bin", "err", fmt.Errorf("kerf: up: %w", syscall.EMFILE))
	log.Info("refusing file", "name", "../c.bin", "err", errors.New("leaves the tree"))
	log.Info("session start", "tls", true)
	log.Warn("a warning stays one", "name", "d.bin")
	out := buf.String()
	for _, want := range []string{"level=WARN msg=\"refusing file\" peer=192.0.2.1:5000 name=a.bin", "level=WARN msg=\"file not stored\" peer=192.0.2.1:5000 name=b.bin", "name=e.bin", "d.bin"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"c.bin", "session start", "level=INFO"} {
		if strings.Contains(out, not) {
			t.Errorf("log has %q, which is not the server's storage failing:\n%s", not, out)
		}
	}
	// Asked for info, the rest comes out too, still at info.
	buf.Reset()
	log = slog.New(sessionLogHandler{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}), nil})
	log.Info("refusing file", "name", "../c.bin", "err", errors.New("leaves the tree"))
	log.Info("refusing file", "name", "a.bin", "err", full)
	if out := buf.String(); !strings.Contains(out, "level=INFO msg=\"refusing file\" name=../c.bin") || !strings.Contains(out, "level=WARN msg=\"refusing file\" name=a.bin") {
		t.Errorf("at info:\n%s", out)
	}
}

// The engine's records name the session's user once there is one
// (its logger was made before the login), and a record that names a
// user keeps its own.
func TestEngineRecordsNameTheUser(t *testing.T) {
	var buf bytes.Buffer
	user := ""
	log := slog.New(sessionLogHandler{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}), func() string { return user }}).With("peer", "192.0.2.1:5000")
	log.Info("before login")
	user = "alice"
	log.Info("refusing file", "name", "a.bin")
	log.Info("own user", "user", "bob")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || strings.Contains(lines[0], "user=") || !strings.HasSuffix(lines[1], "name=a.bin user=alice") ||
		!strings.HasSuffix(lines[2], "user=bob") || strings.Count(lines[2], "user=") != 1 {
		t.Errorf("log:\n%s", buf.String())
	}
}
