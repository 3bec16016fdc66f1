package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file's modification time survives between a client and a server in
// different time zones, both ways, to the nanosecond (as rsync -a keeps
// it). Kermit's date attribute has no zone and stops at the second; two
// kerf peers write it in UTC, with its fraction (docs/protocol.md).
func TestModTimeAcrossTimeZones(t *testing.T) {
	for _, z := range []string{"Asia/Tokyo", "America/New_York"} {
		if _, err := os.Stat(filepath.Join("/usr/share/zoneinfo", z)); err != nil {
			t.Fatalf("time zone data missing (install tzdata): %v", err)
		}
	}
	root, src, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{env: []string{"TZ=Asia/Tokyo"}})
	mtime := time.Date(2020, 1, 1, 0, 0, 0, 123456789, time.UTC)
	p := filepath.Join(src, "tz.bin")
	os.WriteFile(p, []byte("zones"), 0o644)
	os.Chtimes(p, mtime, mtime)

	// The client runs in another zone than the server (its env wins).
	t.Setenv("TZ", "America/New_York")
	mustRun(t, srv, src, nil, "send", p, target(srv.addr, "/"))
	if fi, err := os.Stat(filepath.Join(root, "tz.bin")); err != nil {
		t.Fatal(err)
	} else if !fi.ModTime().Equal(mtime) {
		t.Fatalf("sent file's mtime %v, want %v", fi.ModTime().UTC(), mtime)
	}
	mustRun(t, srv, src, nil, "get", target(srv.addr, "tz.bin"), back)
	if fi, err := os.Stat(filepath.Join(back, "tz.bin")); err != nil {
		t.Fatal(err)
	} else if !fi.ModTime().Equal(mtime) {
		t.Fatalf("fetched file's mtime %v, want %v", fi.ModTime().UTC(), mtime)
	}
}
