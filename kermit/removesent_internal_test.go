package kermit

import (
	"io"
	"log/slog"
	"slices"
	"testing"
)

// recordingRemover records the files RemoveSent is asked to remove.
type recordingRemover struct{ removed []string }

func (r *recordingRemover) CanRemoveSent() error { return nil }
func (r *recordingRemover) RemoveSent(f OutgoingFile) error {
	r.removed = append(r.removed, f.Path)
	return nil
}

// A GET's source removal takes a file the client saved, and one it
// found already there whole, unless the client runs on this machine
// (Config.PeerLocal): what it found may be this very file, reached by
// another path (QA: a get --resume --remove-source-files into the
// server's own directory removed the only copy).
func TestSentRemovalKeepsForLocalClient(t *testing.T) {
	for _, local := range []bool{false, true} {
		rr := &recordingRemover{}
		r := &sentRemoval{fs: rr, taken: map[string]OutgoingFile{}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), local: local}
		for _, p := range []string{"saved", "there"} {
			r.taken[p] = OutgoingFile{Name: p, Path: p}
		}
		tell := r.event(nil)
		tell(Event{Kind: FileSaved, Name: "saved", Path: "saved", Sending: true})
		tell(Event{Kind: FileSkipped, Name: "there", Path: "there", Err: ErrAlreadyThere, Sending: true})
		want := []string{"saved", "there"}
		if local {
			want = want[:1]
		}
		if !slices.Equal(rr.removed, want) {
			t.Errorf("client on this machine %v: removed %q, want %q", local, rr.removed, want)
		}
	}
}
