package kermit_test

import (
	"testing"

	"kerf/kermit"
)

// A streaming sender to a receiver without attribute packets (C-Kermit's
// SET ATTRIBUTES OFF) sends F and then its data at once: the F's ACK,
// arriving while D packets stream, was dropped from the window, and the
// sender waited for it for ever after the last file.
func TestStreamingWithoutAttributes(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	files := []testFile{{"a.bin", randomBytes(200_000, 1)}, {"b.bin", randomBytes(5_000, 2)}, {"c.bin", randomBytes(90_000, 3)}}
	out := writeFiles(t, src, files)
	scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	scfg.Streaming, rcfg.Streaming = true, true
	rcfg.Attributes = false
	serr, rerr := transferEitherInto(t, false, scfg, rcfg, out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send %v, receive %v", serr, rerr)
	}
	checkFiles(t, dst, files)
}
