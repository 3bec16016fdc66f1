package kermit

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// What the sessions of a take-over tell reaches the command line once a
// file: the lost session's cut-off files are held until the take-over
// ends them, what it found whole that the lost session had reported is
// not told again, and what the lost one moved unconfirmed is told done,
// and saved.
func TestShareTrackerTellsEachFileOnce(t *testing.T) {
	for _, recursive := range []bool{false, true} {
		t.Run(fmt.Sprint("recursive ", recursive), func(t *testing.T) { testShareTrackerTellsEachFileOnce(t, recursive) })
	}
}

func testShareTrackerTellsEachFileOnce(t *testing.T, recursive bool) {
	var told []string
	tell := func(e Event) { told = append(told, fmt.Sprintf("%d %s", e.Kind, e.Name)) }
	tr := newShareTracker(2, recursive)
	lost, good := tr.events(0, tell), tr.events(1, tell)
	cut := &CutOffError{errors.New("link lost")}
	lost(Event{Kind: FileDone, Name: "a"})
	lost(Event{Kind: FileFailed, Name: "b", Err: cut}) // unconfirmed
	lost(Event{Kind: FileFailed, Name: "c", Err: cut}) // cut off
	lost(Event{Kind: FileFailed, Name: "d", Err: cut}) // cut off, fails again
	lost(Event{Kind: FileFailed, Name: "e", Err: cut}) // cut off, cut off again
	lost(Event{Kind: FileFailed, Name: "f", Err: errors.New("refused")})
	lost(Event{Kind: FileDone, Name: "h"})
	lost(Event{Kind: FileFailed, Name: "h", Err: &CutOffError{ErrNotSaved}}) // done, not confirmed saved
	lost(Event{Kind: FileDone, Name: "i"})
	lost(Event{Kind: FileFailed, Name: "i", Err: &CutOffError{ErrNotSaved}})
	lost(Event{Kind: FileDone, Name: "j"})
	lost(Event{Kind: FileFailed, Name: "j", Err: &CutOffError{ErrNotSaved}}) // no take-over comes
	good(Event{Kind: FileDone, Name: "g"})
	if want := []string{"2 a", "4 f", "2 h", "2 i", "2 j", "2 g"}; !slices.Equal(told, want) {
		t.Fatalf("before the take-over told %q, want %q", told, want)
	}
	told = nil
	tr.standIn(1, 0)
	good(Event{Kind: FileSkipped, Name: "a", Err: ErrAlreadyThere})
	good(Event{Kind: FileSkipped, Name: "b", Err: ErrAlreadyThere, Size: 9})
	good(Event{Kind: FileDone, Name: "c"})
	good(Event{Kind: FileFailed, Name: "d", Err: errors.New("no room")})
	good(Event{Kind: FileFailed, Name: "e", Err: &CutOffError{errors.New("lost too")}})
	good(Event{Kind: FileStart, Name: "h"}) // sent again whole: confirms what was told
	good(Event{Kind: FileDone, Name: "h"})
	good(Event{Kind: FileFailed, Name: "i", Err: errors.New("no room")})
	tr.standIn(1, 1)
	tr.flush()
	// b: done, and saved (found whole: nothing else would say so).
	if want := []string{"2 b", "5 b", "2 c", "4 d", "4 i", "4 j", "4 e"}; !slices.Equal(told, want) {
		t.Errorf("take-over and flush told %q, want %q", told, want)
	}
}

// A recursive GET's tracker counts each file of a pass once, at its
// first event: a file done and then not saved (ErrSaveFailed), or cut
// off, is not counted again (a review: a count too high would let a
// take-over pass over files the lost pass never told).
func TestShareTrackerCountsEachFileOnce(t *testing.T) {
	tr := newShareTracker(2, true)
	lost := tr.events(0, func(Event) {})
	lost(Event{Kind: FileStart, Name: "a"})
	lost(Event{Kind: FileDone, Name: "a"})
	lost(Event{Kind: FileFailed, Name: "a", Err: ErrSaveFailed})
	lost(Event{Kind: FileSkipped, Name: "b", Err: ErrAlreadyThere})
	lost(Event{Kind: FileStart, Name: "c"})
	lost(Event{Kind: FileStart, Name: "c"}) // begun again
	lost(Event{Kind: FileFailed, Name: "c", Err: &CutOffError{errors.New("link lost")}})
	lost(Event{Kind: FileDone, Name: "d"})
	lost(Event{Kind: FileFailed, Name: "d", Err: &CutOffError{ErrNotSaved}})
	lost(Event{Kind: FileSkipped, Name: "e", Err: errListedWhole}) // not of the stream
	lost(Event{Kind: FileSkipped, Name: "dir/", Err: ErrPassedOver})
	if tr.reached[0] != 4 {
		t.Errorf("share 0 reached %d files, want 4 (a, b, c, d)", tr.reached[0])
	}
}

// A file a GET's lost pass told failed on its own (its whole-file check
// failed, say) that the take-over, fetching the whole share again, gets
// whole is told done, marked Again, and saved, and is not among the
// share's failures; one that fails again is not told twice. (QA: a GET
// said a file failed, exit 4, that the take-over had stored.)
func TestShareTrackerGetRetriedFailureWithdrawn(t *testing.T) {
	type told struct {
		kind  EventKind
		name  string
		again bool
	}
	var got []told
	tell := func(e Event) { got = append(got, told{e.Kind, e.Name, e.Again}) }
	tr := newShareTracker(2, true)
	lost, good := tr.events(0, tell), tr.events(1, tell)
	lost(Event{Kind: FileStart, Name: "a"})
	lost(Event{Kind: FileFailed, Name: "a", Err: errors.New("whole-file CRC-32C mismatch")})
	lost(Event{Kind: FileStart, Name: "b"})
	lost(Event{Kind: FileFailed, Name: "b", Err: errors.New("no room")})
	lost(Event{Kind: FileStart, Name: "c"})
	lost(Event{Kind: FileFailed, Name: "c", Err: &CutOffError{errors.New("link lost")}})
	got = nil
	tr.standIn(1, 0)
	for _, n := range []string{"a", "b", "c"} {
		good(Event{Kind: FileStart, Name: n})
		if n == "b" {
			good(Event{Kind: FileFailed, Name: n, Err: errors.New("no room")})
			continue
		}
		good(Event{Kind: FileDone, Name: n})
		good(Event{Kind: FileSaved, Name: n})
	}
	tr.standIn(1, 1)
	tr.flush()
	want := []told{{FileStart, "a", false}, {FileDone, "a", true}, {FileSaved, "a", false}, {FileStart, "b", false},
		{FileStart, "c", false}, {FileDone, "c", false}, {FileSaved, "c", false}}
	if !slices.Equal(got, want) {
		t.Errorf("take-over told %v, want %v", got, want)
	}
	if f := tr.failedOf(0); !slices.Equal(f, []string{"b"}) {
		t.Errorf("share 0's failures %q, want only b", f)
	}
}

// Files refused at their A (skipped with the receiver's reason) or
// canceled count among a share's failures, as FileFailed ones do, so
// that the outcome of a second pass (the group failed at its end, and
// the files under way were confirmed) still names them; files there
// whole, declined on purpose or passed over do not (QA: a send of 2,000
// files whose directory was made read-only part-way said 254 stored,
// none failed, exit 0).
func TestShareTrackerCountsRefusalsFailed(t *testing.T) {
	tr := newShareTracker(1, false)
	tell := tr.events(0, func(Event) {})
	tell(Event{Kind: FileSkipped, Name: "refused", Err: receiverSaid{errors.New("refused by the receiver: permission denied")}})
	tell(Event{Kind: FileSkipped, Name: "canceled", Err: ErrCanceled})
	tell(Event{Kind: FileSkipped, Name: "there", Err: ErrAlreadyThere})
	tell(Event{Kind: FileSkipped, Name: "declined", Err: fmt.Errorf("%w (date)", ErrDeclined)})
	tell(Event{Kind: FileSkipped, Name: "fifo", Err: PassedOver("a FIFO")})
	tell(Event{Kind: FileFailed, Name: "failed", Err: errors.New("changed while it was sent")})
	if got, want := tr.failedNames(0), []string{"refused", "canceled", "failed"}; !slices.Equal(got, want) {
		t.Errorf("failed %q, want %q", got, want)
	}
	if got, want := tr.failedOf(0), []string{"refused", "canceled", "failed"}; !slices.Equal(got, want) {
		t.Errorf("failedOf %q, want %q", got, want)
	}
}
