package main

import (
	"log/slog"
	"testing"
)

// A client's warnings read as its other lines do, attributes in
// brackets, values quoted where they hold spaces and escaped where a
// peer's name holds controls; info records are not written at warn.
func TestNoteHandler(t *testing.T) {
	var got []string
	log := slog.New(&noteHandler{level: slog.LevelWarn, out: func(s string) { got = append(got, s) }})
	log.Info("not shown")
	log.Warn("still waiting for the receiver's answer on this file", "name", "big/b200.bin", "waited", "30s")
	log.With("peer", "h:1649").Warn("a session was lost", "err", "read: connection reset", "name", "x\x1b[2Jy")
	log.Error("gave up")
	want := []string{
		"kerf: still waiting for the receiver's answer on this file (name=big/b200.bin, waited=30s)\n",
		`kerf: a session was lost (peer=h:1649, err="read: connection reset", name=x\x1b[2Jy)` + "\n",
		"kerf: error: gave up\n",
	}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %q, want %q", i, got[i], want[i])
		}
	}
}

type fakeBar struct{ clears int }

func (b *fakeBar) Clear() error { b.clears++; return nil }

// A note clears the progress bar before it is written, as the
// reporter's own lines do (review: it was written on after the bar).
func TestNoteClearsTheBar(t *testing.T) {
	b := &fakeBar{}
	setLiveBar(b)
	defer setLiveBar(nil)
	writeNote("kerf: a note from TestNoteClearsTheBar\n")
	if b.clears != 1 {
		t.Errorf("the bar was cleared %d times for one note, want 1", b.clears)
	}
}
