package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"kerf/kermit"
)

// A session that could not open is said on stderr when --sessions was
// given, but not when the command was interrupted as they opened: that
// is said once, as such (QA af: "1 of 3 sessions opened: control:
// login: context canceled" before "interrupted").
func TestNoteFewerSessions(t *testing.T) {
	for _, interrupted := range []bool{false, true} {
		fs := flag.NewFlagSet("send", flag.ContinueOnError)
		fs.Int("sessions", 1, "")
		fs.Set("sessions", "3")
		c := cli.NewContext(cli.NewApp(), fs, nil)
		ctx, cancel := context.WithCancel(context.Background())
		if interrupted {
			cancel()
		}
		defer cancel()
		c.Context = ctx
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		saved := os.Stderr
		os.Stderr = w
		noteFewerSessions(c, 1, 3, errors.New("control: login: context canceled"))
		os.Stderr = saved
		w.Close()
		out, _ := io.ReadAll(r)
		said := strings.Contains(string(out), "1 of 3 sessions opened")
		if said == interrupted {
			t.Errorf("interrupted %v: stderr %q", interrupted, out)
		}
	}
}

// By default, sessions beyond the first are opened only where the files
// they take repay their setup: many files, or big ones.
func TestWorthSessions(t *testing.T) {
	const unknown = -1
	for _, c := range []struct {
		n, files int
		bytes    int64
		want     int
	}{
		{1, 5000, 0, 1},
		{2, 2000, 0, 2},       // the LAN's small case
		{2, 191, 0, 1},        // 191 * 1 < 96 * 2
		{2, 192, 0, 2},        //
		{4, 40, 40 << 14, 1},  // 40 small files on a long path: one session
		{4, 127, 0, 1},        // 127 * 3 < 96 * 4
		{4, 128, 0, 4},        //
		{2, 10, 10 << 30, 2},  // ten big files
		{2, 10, 128 << 20, 2}, // 64 MiB a session
		{2, 10, 128<<20 - 1, 1},
		{4, 40, unknown, 4}, // sizes not known: as before
	} {
		asked := false
		got := worthSessions(c.n, c.files, func() int64 { asked = true; return c.bytes })
		if got != c.want {
			t.Errorf("worthSessions(%d, %d files, %d bytes) = %d, want %d", c.n, c.files, c.bytes, got, c.want)
		}
		if asked && (c.n <= 1 || c.files*(c.n-1) >= breakEvenFiles*c.n) {
			t.Errorf("worthSessions(%d, %d) looked at the sizes, which the count settles", c.n, c.files)
		}
	}
}

func TestSizeOf(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []kermit.OutgoingFile{
		{Name: "d", Dir: true, Size: 4096},
		{Name: "a", Size: 10},
		{Name: "f", Size: -1, Path: p}, // not looked at by the walk
	}
	if got := sizeOf(files); got != 1010 {
		t.Errorf("sizeOf = %d, want 1010", got)
	}
	if got := sizeOf(nil); got != -1 {
		t.Errorf("sizeOf(nil) = %d, want -1 (not kept)", got)
	}
	gone := append(files, kermit.OutgoingFile{Name: "g", Size: -1, Path: filepath.Join(dir, "gone")})
	if got := sizeOf(gone); got != -1 {
		t.Errorf("sizeOf with a file gone = %d, want -1", got)
	}
}
