package kermit

import (
	"errors"
	"fmt"
	"testing"
)

// A file the lost session told done, not confirmed saved, that the
// receiver refuses when the take-over sends it again is told refused,
// so that it leaves the counts. (Found by a review: the refusal was
// swallowed, and the file stayed counted.)
func TestTakeOverRefusalIsTold(t *testing.T) {
	var told []string
	tell := func(e Event) { told = append(told, fmt.Sprintf("%d %s %v", e.Kind, e.Name, e.Err)) }
	tr := newSendTracker(2)
	lost, good := tr.events(0, tell), tr.events(1, tell)
	lost(Event{Kind: FileDone, Name: "x", Sending: true})
	lost(Event{Kind: FileFailed, Name: "x", Sending: true, Err: &CutOffError{ErrNotSaved}})
	tr.standIn(1, 0)
	good(Event{Kind: FileStart, Name: "x", Sending: true})
	good(Event{Kind: FileSkipped, Name: "x", Sending: true, Err: errors.New("refused by the receiver: filestore: file is being received by another session")})
	tr.standIn(1, 1)
	tr.flush()
	if len(told) != 2 {
		t.Errorf("x told done, then its refusal swallowed: %q", told)
	}
}
