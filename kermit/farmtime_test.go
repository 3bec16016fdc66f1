package kermit_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/kermit"
)

// A modification time Kermit's date cannot carry (a year past 9999) is
// said by the sender, whose copy gets the time it arrives; one it can
// carry is not (QA: silent).
func TestFarModTimeIsSaid(t *testing.T) {
	dst := t.TempDir()
	far := time.Date(10001, 2, 4, 0, 0, 0, 0, time.UTC)
	near := time.Date(2400, 12, 30, 0, 0, 0, 0, time.UTC) // within what any file system here keeps
	file := func(name string, when time.Time) kermit.OutgoingFile {
		// Not stat'ed (a file system may not keep such a time).
		return kermit.OutgoingFile{Name: name, Size: int64(len(name)), ModTime: when, Open: func() (kermit.FileReader, error) {
			return streamReader{bytes.NewReader([]byte(name))}, nil
		}}
	}
	out := []kermit.OutgoingFile{file("far.bin", far), file("near.bin", near)}
	var log syncBuf
	scfg := kermit.DefaultConfig()
	scfg.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	serr, rerr := transferEitherInto(t, false, scfg, kermit.DefaultConfig(), out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send %v, receive %v", serr, rerr)
	}
	said := log.String()
	if !strings.Contains(said, "outside years 0-9999") || !strings.Contains(said, "far.bin") || strings.Contains(said, "near.bin") {
		t.Errorf("sender's log: %q; want far.bin's time said, and near.bin's not", said)
	}
	if fi, err := os.Stat(filepath.Join(dst, "near.bin")); err != nil || !fi.ModTime().Equal(near) {
		t.Errorf("near.bin: %v, %v; want its time %v", fi.ModTime(), err, near)
	}
}
