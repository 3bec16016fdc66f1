package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schollz/progressbar/v3"

	"kerf/kermit"
)

// The total counts the bytes of the files transferred: not those of a
// file refused or failed after its data went (they crossed the link to
// be thrown away), nor its late progress, nor a skipped file's.
func TestReporterCountsTransferredBytes(t *testing.T) {
	r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
	for _, e := range []kermit.Event{
		{Kind: kermit.FileStart, Name: "refused", Size: 2 << 20},
		{Kind: kermit.FileProgress, Name: "refused", Size: 2 << 20, Bytes: 1 << 20},
		{Kind: kermit.FileSkipped, Name: "refused", Err: errors.New("refused by the receiver (length)")},
		{Kind: kermit.FileProgress, Name: "refused", Size: 2 << 20, Bytes: 2 << 20},
		{Kind: kermit.FileStart, Name: "there", Size: 500},
		{Kind: kermit.FileProgress, Name: "there", Size: 500, Bytes: 500},
		{Kind: kermit.FileSkipped, Name: "there", Err: kermit.ErrAlreadyThere, Size: 500},
		{Kind: kermit.FileStart, Name: "cut", Size: 900},
		{Kind: kermit.FileProgress, Name: "cut", Size: 900, Bytes: 300},
		{Kind: kermit.FileFailed, Name: "cut", Err: errors.New("the transfer ended before the file did")},
		{Kind: kermit.FileStart, Name: "ok", Size: 8},
		{Kind: kermit.FileProgress, Name: "ok", Size: 8, Bytes: 5},
		{Kind: kermit.FileDone, Name: "ok", Size: 8, Bytes: 8},
		{Kind: kermit.FileSaved, Name: "ok", Size: 8, Bytes: 8},
		// Done, then its rename at the group's end failed.
		{Kind: kermit.FileStart, Name: "unsaved", Size: 70},
		{Kind: kermit.FileDone, Name: "unsaved", Size: 70, Bytes: 70},
		{Kind: kermit.FileFailed, Name: "unsaved", Size: 70, Bytes: 70, Err: fmt.Errorf("%w: filestore: completing unsaved: read-only file system", kermit.ErrSaveFailed)},
	} {
		r.event(e)
	}
	if r.done != 8 || r.files != 2 {
		t.Errorf("done %d bytes, %d files; want 8 bytes (ok alone), 2 files (ok and there)", r.done, r.files)
	}
}

// A file begun again (a partial that was not the file's start) has a
// second file_start, saying where it begins now (QA: the first's offset
// was not used, and nothing said so), and its bytes count once.
func TestReporterFileBegunAgain(t *testing.T) {
	var out bytes.Buffer
	r := &reporter{out: io.Discard, json: json.NewEncoder(&out), start: time.Now(), current: map[string]int64{}}
	for _, e := range []kermit.Event{
		{Kind: kermit.FileStart, Name: "f", Size: 100, Offset: 40},
		{Kind: kermit.FileProgress, Name: "f", Size: 100, Bytes: 30},
		{Kind: kermit.FileStart, Name: "f", Size: 100},
		{Kind: kermit.FileProgress, Name: "f", Size: 100, Bytes: 50},
		{Kind: kermit.FileDone, Name: "f", Size: 100, Bytes: 100},
	} {
		r.event(e)
	}
	if n := strings.Count(out.String(), `"file_start"`); n != 2 || r.done != 100 || !strings.Contains(out.String(), `{"event":"file_start","name":"f","size":100}`) {
		t.Errorf("%d file_start events, %d bytes; want 2 (the second without an offset) and 100:\n%s", n, r.done, out.String())
	}
	// Taken over by another session from the 40 bytes the receiver
	// kept of the 70 the lost session moved: 40 + 60 bytes. (A sender
	// learns the offset after its file_start.)
	for _, offset := range []int64{0, 40} {
		r = &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
		for _, e := range []kermit.Event{
			{Kind: kermit.FileStart, Name: "f", Size: 100, Sending: true},
			{Kind: kermit.FileProgress, Name: "f", Size: 100, Bytes: 70, Sending: true},
			{Kind: kermit.FileStart, Name: "f", Size: 100, Offset: offset, Sending: true},
			{Kind: kermit.FileProgress, Name: "f", Size: 100, Bytes: 30, Sending: true},
			{Kind: kermit.FileDone, Name: "f", Size: 100, Bytes: 60, Offset: 40, Sending: true},
		} {
			r.event(e)
		}
		if r.done != 100 {
			t.Errorf("taken over from 40 bytes kept (file_start offset %d): %d bytes, want 100", offset, r.done)
		}
	}
}

// The progress bar of a send ends full at the bytes transferred: a file
// refused, failed or found whole leaves the total, a resumed one counts
// from its offset, and bytes thrown away leave the count.
func TestReporterBarEndsAtItsTotal(t *testing.T) {
	files := []kermit.OutgoingFile{
		{Name: "refused", Size: 2 << 20}, {Name: "there", Size: 500}, {Name: "cut", Size: 900},
		{Name: "resumed", Size: 100}, {Name: "again", Size: 50}, {Name: "ok", Size: 8},
		{Name: "dir", Dir: true},
	}
	r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
	r.planned = map[string]int64{}
	for _, f := range files {
		if !f.Dir {
			r.planned[f.Name] = f.Size
			r.total += f.Size
		}
	}
	r.bar = progressbar.NewOptions64(r.total, progressbar.OptionSetWriter(io.Discard))
	for _, e := range []kermit.Event{
		{Kind: kermit.FileStart, Name: "refused", Size: 2 << 20},
		{Kind: kermit.FileProgress, Name: "refused", Size: 2 << 20, Bytes: 2 << 20},
		{Kind: kermit.FileSkipped, Name: "refused", Err: errors.New("refused by the receiver (length)")},
		{Kind: kermit.FileSkipped, Name: "there", Err: kermit.ErrAlreadyThere, Size: 500},
		{Kind: kermit.FileStart, Name: "cut", Size: 900},
		{Kind: kermit.FileProgress, Name: "cut", Size: 900, Bytes: 300},
		{Kind: kermit.FileFailed, Name: "cut", Err: errors.New("the transfer ended before the file did")},
		{Kind: kermit.FileStart, Name: "resumed", Size: 100, Offset: 40},
		{Kind: kermit.FileDone, Name: "resumed", Size: 100, Bytes: 60, Offset: 40},
		{Kind: kermit.FileStart, Name: "again", Size: 50, Offset: 20},
		{Kind: kermit.FileProgress, Name: "again", Size: 50, Bytes: 30},
		{Kind: kermit.FileStart, Name: "again", Size: 50},
		{Kind: kermit.FileDone, Name: "again", Size: 50, Bytes: 50},
		{Kind: kermit.FileStart, Name: "ok", Size: 8},
		{Kind: kermit.FileDone, Name: "ok", Size: 8, Bytes: 8},
	} {
		r.event(e)
	}
	const want = 60 + 50 + 8
	if st := r.bar.State(); st.CurrentNum != want || st.Max != want {
		t.Errorf("bar at %d of %d, want %d of %d", st.CurrentNum, st.Max, want, want)
	}
}

// A GET from a classic server names the plain names of which nothing
// came: not one that came under a classic Kermit's converted name, nor
// one given in braces (C-Kermit's way with spaces), nor a wildcard.
func TestMissingNames(t *testing.T) {
	r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
	r.expectNames([]string{"{with space.txt}", "MixedCase.txt", "dir", "*.log", "nothere.bin", "{gone too}"})
	for _, n := range []string{"with space.txt", "mixedcase.txt", "dir/inside.bin"} {
		r.event(kermit.Event{Kind: kermit.FileDone, Name: n})
	}
	r.missingNames()
	if want := []string{"nothere.bin", "gone too"}; !slices.Equal(r.failed, want) {
		t.Errorf("named missing %q, want %q", r.failed, want)
	}
}

// Another file of a name already done and refused ("same name as ...,
// sent already", as kerf send a/x b/x makes it) does not take the first
// out of the counts or the bar's total.
func TestReporterDuplicateNameKeepsTheFirst(t *testing.T) {
	r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
	r.planned, r.total = map[string]int64{"x": 1000}, 1000
	for _, e := range []kermit.Event{
		{Kind: kermit.FileStart, Name: "x", Size: 1000, Sending: true},
		{Kind: kermit.FileProgress, Name: "x", Size: 1000, Bytes: 1000, Sending: true},
		{Kind: kermit.FileDone, Name: "x", Size: 1000, Bytes: 1000, Sending: true},
		{Kind: kermit.FileFailed, Name: "x", Err: errors.New("b/x: same name as a/x, sent already"), Sending: true},
		{Kind: kermit.FileSaved, Name: "x", Size: 1000, Bytes: 1000, Sending: true},
	} {
		r.event(e)
	}
	if r.files != 1 || r.done != 1000 || r.total != 1000 {
		t.Errorf("files %d, done %d bytes, total %d; want 1 file, 1000 bytes of 1000", r.files, r.done, r.total)
	}
}

// A file told failed, then done Again (a GET's take-over fetched it
// whole), is no longer among the files not received, and counts once;
// its file_done says the file_error is withdrawn, and no other does.
func TestReporterFailureWithdrawn(t *testing.T) {
	var out bytes.Buffer
	r := &reporter{out: io.Discard, json: json.NewEncoder(&out), start: time.Now(), current: map[string]int64{}}
	for _, e := range []kermit.Event{
		{Kind: kermit.FileStart, Name: "a", Size: 10},
		{Kind: kermit.FileFailed, Name: "a", Err: errors.New("whole-file CRC-32C mismatch")},
		{Kind: kermit.FileStart, Name: "b", Size: 10},
		{Kind: kermit.FileFailed, Name: "b", Err: errors.New("no room")},
		{Kind: kermit.FileStart, Name: "a", Size: 10},
		{Kind: kermit.FileDone, Name: "a", Size: 10, Bytes: 10, Again: true},
		{Kind: kermit.FileSaved, Name: "a", Size: 10, Bytes: 10},
		{Kind: kermit.FileStart, Name: "c", Size: 10},
		{Kind: kermit.FileDone, Name: "c", Size: 10, Bytes: 10},
	} {
		r.event(e)
	}
	if got := withdrawnIn(t, out.String()); !slices.Equal(got, []string{"file_done a"}) {
		t.Errorf("error_withdrawn on %q, want on a's file_done alone:\n%s", got, out.String())
	}
	if err := r.notReceived(); err == nil || !strings.HasPrefix(err.Error(), "1 file(s) not received") {
		t.Errorf("notReceived: %v; want b alone", err)
	}
	if !slices.Equal(r.failed, []string{"b"}) {
		t.Errorf("failed %q, want [b]", r.failed)
	}
	if r.done != 20 || r.files != 2 {
		t.Errorf("done %d bytes, %d files; want 20, 2 (a once, and c)", r.done, r.files)
	}
}

// A directory that fails in two sessions (each sends it for its share
// of the files under it) is told once (QA: its file_error came twice).
func TestReporterFailureToldOnce(t *testing.T) {
	var out bytes.Buffer
	r := &reporter{out: io.Discard, json: json.NewEncoder(&out), start: time.Now(), current: map[string]int64{}}
	why := errors.New("not made by the receiver: read-only access")
	for _, e := range []kermit.Event{
		{Kind: kermit.FileFailed, Name: "src", Err: why, Sending: true},
		{Kind: kermit.FileFailed, Name: "src/a", Err: why, Sending: true},
		{Kind: kermit.FileFailed, Name: "src", Err: why, Sending: true},
	} {
		r.event(e)
	}
	if n := strings.Count(out.String(), `"event":"file_error","name":"src",`); n != 1 {
		t.Errorf("%d file_error events for src, want 1:\n%s", n, out.String())
	}
	if !slices.Equal(r.failed, []string{"src", "src/a"}) {
		t.Errorf("failed %q, want [src src/a]", r.failed)
	}
}

// A name that fails again in other words (another file of the name, a
// take-over that failed otherwise) is told again, and a server tells
// every failure, whatever it said before (review).
func TestReporterOtherFailureTold(t *testing.T) {
	var out bytes.Buffer
	r := &reporter{out: io.Discard, json: json.NewEncoder(&out), start: time.Now(), current: map[string]int64{}}
	r.event(kermit.Event{Kind: kermit.FileFailed, Name: "x", Err: errors.New("a/x: permission denied")})
	r.event(kermit.Event{Kind: kermit.FileFailed, Name: "x", Err: errors.New("b/x: no space left on device")})
	if n := strings.Count(out.String(), `"event":"file_error","name":"x",`); n != 2 {
		t.Errorf("%d file_error events for x, want 2:\n%s", n, out.String())
	}
	var lines bytes.Buffer
	s := &reporter{out: &lines, serving: true, start: time.Now(), current: map[string]int64{}}
	for range 2 {
		s.event(kermit.Event{Kind: kermit.FileFailed, Name: "up.bin", Err: errors.New("permission denied")})
	}
	if n := strings.Count(lines.String(), "up.bin: permission denied"); n != 2 {
		t.Errorf("a server told %d of two failures:\n%s", n, lines.String())
	}
}

// A file cut off by Ctrl-C is said to be kept for --resume where this
// side received it and kept what came, said to be sent again whole
// where it kept nothing (a small file received unnamed; review), and
// left to the receiver where it sent it (QA: a sender said "what came
// is kept").
func TestReporterInterruptedWords(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&signalCause{syscall.SIGINT})
	keptErr := &kermit.CutOffError{Err: fmt.Errorf("%w: %w", kermit.ErrPartialKept, context.Canceled)}
	for _, tc := range []struct {
		what    string
		err     error
		sending bool
		stdout  bool
		want    string
	}{
		{"received, kept", keptErr, false, false, "what came is kept for --resume"},
		{"received, nothing kept", context.Canceled, false, false, "nothing of it is kept"},
		{"sent", context.Canceled, true, false, "a receiver that keeps partials"},
		// Whole there, its saving not confirmed: not cut off (QA at).
		{"sent whole, not confirmed", fmt.Errorf("%w: %w", kermit.ErrNotSaved, context.Canceled), true, false, "not confirmed saved: the receiver had it whole"},
		{"to standard output", context.Canceled, false, true, "what went to standard output is not the whole file"},
	} {
		var out bytes.Buffer
		r := &reporter{ctx: ctx, out: io.Discard, json: json.NewEncoder(&out), start: time.Now(), current: map[string]int64{}, toStdout: tc.stdout}
		r.event(kermit.Event{Kind: kermit.FileFailed, Name: "big.bin", Err: tc.err, Sending: tc.sending})
		if !strings.Contains(out.String(), tc.want) || !strings.Contains(out.String(), "interrupted") {
			t.Errorf("%s: %s; want %q", tc.what, out.String(), tc.want)
		}
	}
}

// A GET --resume whose partial (40 bytes) is not the start of the
// server's file is received whole (FileStart at 40, then again at 0),
// cut at 70 and resumed there by a successor: every one of the 100 bytes
// moved once and counts once (review: the first attempt's 40 stayed its
// start, and 40 bytes went uncounted).
func TestReporterPartialDiffersThenResumed(t *testing.T) {
	r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
	for _, e := range []kermit.Event{
		{Kind: kermit.FileStart, Name: "f", Size: 100, Offset: 40},
		{Kind: kermit.FileStart, Name: "f", Size: 100, Offset: 0}, // not its start: whole
		{Kind: kermit.FileProgress, Name: "f", Size: 100, Bytes: 70, Offset: 0},
		{Kind: kermit.FileStart, Name: "f", Size: 100, Offset: 70}, // the successor resumes
		{Kind: kermit.FileProgress, Name: "f", Size: 100, Bytes: 30, Offset: 70},
		{Kind: kermit.FileDone, Name: "f", Size: 100, Bytes: 30, Offset: 70},
	} {
		r.event(e)
	}
	if r.done != 100 {
		t.Errorf("%d bytes counted, want 100", r.done)
	}
}

// A send --resume from a 40-byte partial moves 30 bytes, is cut with 60
// kept, and a successor sends the last 40: 60 bytes count (20 kept of
// the first 30, and 40). The successor's FileStart, which a sender
// sends before it knows the offset, does not move where the file began
// (it did, and 70 counted).
func TestReporterResumedSendBegunAgain(t *testing.T) {
	r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
	for _, e := range []kermit.Event{
		{Kind: kermit.FileStart, Name: "f", Size: 100, Sending: true},
		{Kind: kermit.FileProgress, Name: "f", Size: 100, Bytes: 30, Offset: 40, Sending: true},
		{Kind: kermit.FileStart, Name: "f", Size: 100, Sending: true}, // the successor
		{Kind: kermit.FileProgress, Name: "f", Size: 100, Bytes: 40, Offset: 60, Sending: true},
		{Kind: kermit.FileDone, Name: "f", Size: 100, Bytes: 40, Offset: 60, Sending: true},
	} {
		r.event(e)
	}
	if r.done != 60 {
		t.Errorf("%d bytes counted, want 60", r.done)
	}
}

// A file a classic receiver declined (its collision setting keeps its
// own copy) is said without a terminal too; one a resume found whole is
// not (a rerun finds thousands). (QA: the decline was silent, exit 0.)
func TestReporterSaysDeclined(t *testing.T) {
	var out strings.Builder
	r := &reporter{out: &out, start: time.Now(), current: map[string]int64{}}
	r.event(kermit.Event{Kind: kermit.FileSkipped, Name: "kept.txt", Size: 5, Err: kermit.ErrDeclined, Sending: true})
	r.event(kermit.Event{Kind: kermit.FileSkipped, Name: "whole.txt", Size: 5, Err: kermit.ErrAlreadyThere, Sending: true})
	if got := out.String(); !strings.Contains(got, "kept.txt: declined by the receiver") || strings.Contains(got, "whole.txt") {
		t.Errorf("said %q; want the decline, and nothing of the file already there", got)
	}
	if len(r.failed) != 0 {
		t.Errorf("failed %q: a decline is no failure", r.failed)
	}
}

// The error that ends a transfer in a file, said on that file's line,
// is not said again in full after it, nor the file's name twice on its
// line (QA: "kerf: f: kermit: f: received …" and then the same again).
func TestReporterSaysAnEndOnce(t *testing.T) {
	var out bytes.Buffer
	r := &reporter{ctx: context.Background(), out: &out, start: time.Now(), current: map[string]int64{}}
	why := errors.New("kermit: all256.bin: received 16385 bytes, sender announced 16384")
	r.event(kermit.Event{Kind: kermit.FileFailed, Name: "all256.bin", Err: &kermit.CutOffError{Err: why}})
	if got := out.String(); got != "kerf: all256.bin: received 16385 bytes, sender announced 16384\n" {
		t.Errorf("the file's line: %q", got)
	}
	err := r.end(why, true)
	if !errors.Is(err, why) || strings.Contains(err.Error(), "16385") || !strings.Contains(err.Error(), "all256.bin") {
		t.Errorf("end: %v; want a short line naming the file, still the error", err)
	}
	// Another error than the file's is said in full.
	other := errors.New("kermit: the link went")
	if err := r.end(other, true); !strings.Contains(err.Error(), "the link went") {
		t.Errorf("end with another error: %v", err)
	}
}

// A file told not saved under its name (the group's renames failed)
// that a later pass saves is no longer among the failures, and counts
// once; a second file of a name refused stays failed when the first is
// saved (QA: a get -r whose directory went read-only part-way, every
// file there in the end, exit 4 naming 62 of them).
func TestReporterNotSavedThenSavedWithdrawn(t *testing.T) {
	var out bytes.Buffer
	r := &reporter{out: io.Discard, json: json.NewEncoder(&out), start: time.Now(), current: map[string]int64{}}
	for _, e := range []kermit.Event{
		{Kind: kermit.FileStart, Name: "a", Size: 10},
		{Kind: kermit.FileDone, Name: "a", Size: 10, Bytes: 10},
		{Kind: kermit.FileFailed, Name: "a", Err: fmt.Errorf("%w: linkat: permission denied", kermit.ErrSaveFailed)},
		{Kind: kermit.FileStart, Name: "x", Size: 10},
		{Kind: kermit.FileDone, Name: "x", Size: 10, Bytes: 10},
		{Kind: kermit.FileFailed, Name: "x", Err: errors.New("b/x: same name as a/x, already received")},
		{Kind: kermit.FileSaved, Name: "a", Size: 10, Bytes: 10},
		{Kind: kermit.FileSaved, Name: "x", Size: 10, Bytes: 10},
	} {
		r.event(e)
	}
	if !slices.Equal(r.failed, []string{"x"}) || r.files != 2 {
		t.Errorf("failed %q, %d files; want x alone failed, 2 files", r.failed, r.files)
	}
	if got := withdrawnIn(t, out.String()); !slices.Equal(got, []string{"file_saved a"}) {
		t.Errorf("error_withdrawn on %q, want on a's file_saved alone:\n%s", got, out.String())
	}
}

// withdrawnIn lists the JSON events ("event name") that carry
// error_withdrawn.
func withdrawnIn(t *testing.T, events string) []string {
	t.Helper()
	var got []string
	for line := range strings.Lines(events) {
		var e struct {
			Event     string
			Name      string
			Withdrawn bool `json:"error_withdrawn"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if e.Withdrawn {
			got = append(got, e.Event+" "+e.Name)
		}
	}
	return got
}

// A transfer on which nothing moves is said to be stalled: with --json a
// progress event of the file under way every stallEvery, with
// stalled_seconds (QA: nothing was said for a minute of a link down);
// once bytes move again, nothing more.
func TestReporterSaysStalls(t *testing.T) {
	var out bytes.Buffer
	r := &reporter{out: io.Discard, json: json.NewEncoder(&out), start: time.Now(), current: map[string]int64{}}
	r.event(kermit.Event{Kind: kermit.FileStart, Name: "big", Size: 100})
	r.event(kermit.Event{Kind: kermit.FileProgress, Name: "big", Size: 100, Bytes: 40})
	r.mu.Lock()
	at := r.moved
	r.checkStall(at.Add(time.Second))      // not yet
	r.checkStall(at.Add(6 * time.Second))  // said
	r.checkStall(at.Add(8 * time.Second))  // said 2 s ago: not again
	r.checkStall(at.Add(11 * time.Second)) // again
	r.mu.Unlock()
	r.event(kermit.Event{Kind: kermit.FileProgress, Name: "big", Size: 100, Bytes: 60})
	r.mu.Lock()
	r.checkStall(r.moved.Add(time.Second)) // moving again
	r.mu.Unlock()
	r.finish(nil)
	var stalls []float64
	dec := json.NewDecoder(&out)
	for {
		var ev struct {
			Event   string  `json:"event"`
			Name    string  `json:"name"`
			Bytes   *int64  `json:"bytes"`
			Stalled float64 `json:"stalled_seconds"`
		}
		if err := dec.Decode(&ev); err != nil {
			break
		}
		if ev.Stalled > 0 {
			if ev.Event != "progress" || ev.Name != "big" || ev.Bytes == nil || *ev.Bytes != 40 {
				t.Errorf("stall said as %+v, want a progress event of big at 40 bytes", ev)
			}
			stalls = append(stalls, ev.Stalled)
		}
	}
	if !slices.Equal(stalls, []float64{6, 11}) {
		t.Errorf("stalls said %v, want [6 11]", stalls)
	}
}

// After a reconnection a file goes on from where the receiver kept it:
// a second file_start says where (QA y: progress went from 98 % to 14 %
// with only a reconnecting event between), each progress event carries
// its offset, and a stalled one its size (QA y: left out then).
func TestReporterSaysEachAttempt(t *testing.T) {
	var out bytes.Buffer
	r := &reporter{out: io.Discard, json: json.NewEncoder(&out), start: time.Now(), current: map[string]int64{}}
	for _, e := range []kermit.Event{
		{Kind: kermit.FileStart, Name: "f", Size: 1000},
		{Kind: kermit.FileProgress, Name: "f", Size: 1000, Bytes: 900},
		{Kind: kermit.FileStart, Name: "f", Size: 1000, Offset: 300}, // the gap-free part kept
	} {
		r.event(e)
	}
	time.Sleep(600 * time.Millisecond) // (progress events go at most every 500 ms)
	r.event(kermit.Event{Kind: kermit.FileProgress, Name: "f", Size: 1000, Bytes: 200, Offset: 300})
	// Under the reporter's lock: its stall watcher runs (CI: -race
	// caught this test writing moved as the watcher read it).
	r.mu.Lock()
	r.moved = time.Now().Add(-stallAfter - time.Second)
	r.checkStall(time.Now())
	said := out.String()
	r.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(said), "\n")
	want := []string{
		`{"event":"file_start","name":"f","size":1000}`,
		`{"event":"progress","name":"f","size":1000,"bytes":900,`,
		`{"event":"file_start","name":"f","size":1000,"offset":300}`,
		`{"event":"progress","name":"f","size":1000,"bytes":200,"offset":300,`,
		`{"event":"progress","name":"f","size":1000,"bytes":200,"offset":300,`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d events, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("event %d: %s\nwant it to begin %s", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[4], `"stalled_seconds"`) {
		t.Errorf("the last event is not the stall's: %s", lines[4])
	}
}

// A get of one file by its name has a total, its size less what was
// there, once its start tells it: the bar shows a percentage and the
// time left (QA y: a spinner for a long fetch of one file). A get of
// several keeps no total.
func TestReporterOneFileGetHasATotal(t *testing.T) {
	for _, one := range []bool{true, false} {
		r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}, total: -1, oneFile: one}
		for _, e := range []kermit.Event{
			{Kind: kermit.FileStart, Name: "f", Size: 100, Offset: 40},
			{Kind: kermit.FileProgress, Name: "f", Size: 100, Bytes: 30, Offset: 40},
		} {
			r.event(e)
		}
		want := int64(-1)
		if one {
			want = 60
		}
		if r.total != want {
			t.Errorf("one file %v: total %d, want %d", one, r.total, want)
		}
		r.event(kermit.Event{Kind: kermit.FileDone, Name: "f", Size: 100, Bytes: 60, Offset: 40})
		if r.done != 60 || one && r.total != 60 {
			t.Errorf("one file %v: done %d of %d, want 60 of 60", one, r.done, r.total)
		}
	}
}

// A received file that goes on after a reconnection from what the
// receiver kept counts that part at once: the total does not fall to
// the new attempt's bytes and jump back at the end (QA y: 74 MiB, then
// 0 B), and it ends at the file's size.
func TestReporterResumedAttemptKeepsItsCount(t *testing.T) {
	r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
	for _, e := range []kermit.Event{
		{Kind: kermit.FileStart, Name: "f", Size: 1000},
		{Kind: kermit.FileProgress, Name: "f", Size: 1000, Bytes: 900},
		{Kind: kermit.FileStart, Name: "f", Size: 1000, Offset: 300},
	} {
		r.event(e)
	}
	if r.done != 300 {
		t.Errorf("after the new attempt's start: %d bytes done, want the 300 kept", r.done)
	}
	r.event(kermit.Event{Kind: kermit.FileProgress, Name: "f", Size: 1000, Bytes: 200, Offset: 300})
	if r.done != 500 {
		t.Errorf("200 bytes into it: %d done, want 500", r.done)
	}
	r.event(kermit.Event{Kind: kermit.FileDone, Name: "f", Size: 1000, Bytes: 700, Offset: 300})
	if r.done != 1000 {
		t.Errorf("at its end: %d done, want 1000", r.done)
	}
}

// A one-file get resumed at 400 of 1000, 300 moved, then going on at 700
// after a reconnection: the bar stays at 300 of 600 and ends at 600 of
// 600 (review 50: it fell to 0 of 1000, and showed 150 of 1000 when 850
// of the file was there).
func TestReporterOneFileGetAcrossAReconnection(t *testing.T) {
	r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}, total: -1, oneFile: true}
	step := func(e kermit.Event, done, total int64) {
		t.Helper()
		r.event(e)
		if r.done != done || r.total != total {
			t.Errorf("after %v at %d: %d of %d, want %d of %d", e.Kind, e.Offset, r.done, r.total, done, total)
		}
	}
	step(kermit.Event{Kind: kermit.FileStart, Name: "f", Size: 1000, Offset: 400}, 0, 600)
	step(kermit.Event{Kind: kermit.FileProgress, Name: "f", Size: 1000, Bytes: 300, Offset: 400}, 300, 600)
	step(kermit.Event{Kind: kermit.FileStart, Name: "f", Size: 1000, Offset: 700}, 300, 600)
	step(kermit.Event{Kind: kermit.FileProgress, Name: "f", Size: 1000, Bytes: 150, Offset: 700}, 450, 600)
	step(kermit.Event{Kind: kermit.FileDone, Name: "f", Size: 1000, Bytes: 300, Offset: 700}, 600, 600)
}

// Ranges the receiver kept past the offset (Event.Kept) count in the
// run's bytes only when this run moved them, in an attempt before a
// reconnection; kept from an earlier run they are not this one's
// (review 51: the done total counted them).
func TestReporterKeptRangesCountOnlyWhenThisRunMovedThem(t *testing.T) {
	for _, sending := range []bool{false, true} {
		// Another run kept 300 and the range 500-800: 400 moved now.
		r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
		for _, e := range []kermit.Event{
			{Kind: kermit.FileStart, Name: "f", Size: 1000, Offset: 300, Sending: sending},
			{Kind: kermit.FileProgress, Name: "f", Size: 1000, Bytes: 700, Offset: 300, Sending: sending},
			{Kind: kermit.FileDone, Name: "f", Size: 1000, Bytes: 700, Kept: 300, Offset: 300, Sending: sending},
		} {
			r.event(e)
		}
		if r.done != 400 {
			t.Errorf("sending %v, kept by another run: %d bytes done, want 400", sending, r.done)
		}

		// This run moved 850 (to 300, 500-800 and some more), then
		// went on from 300 with 500-800 kept: the whole file is its.
		r = &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
		start := kermit.Event{Kind: kermit.FileStart, Name: "f", Size: 1000, Offset: 300, Sending: sending}
		if sending {
			start.Offset = 0 // a sender learns it later
		}
		for _, e := range []kermit.Event{
			{Kind: kermit.FileStart, Name: "f", Size: 1000, Sending: sending},
			{Kind: kermit.FileProgress, Name: "f", Size: 1000, Bytes: 850, Sending: sending},
			start,
			{Kind: kermit.FileProgress, Name: "f", Size: 1000, Bytes: 700, Offset: 300, Sending: sending},
			{Kind: kermit.FileDone, Name: "f", Size: 1000, Bytes: 700, Kept: 300, Offset: 300, Sending: sending},
		} {
			r.event(e)
		}
		if r.done != 1000 {
			t.Errorf("sending %v, kept by this run: %d bytes done, want 1000", sending, r.done)
		}
	}
}

// The error that ended a transfer is shortened to "said above" only
// where a file's line said it: past maxErrLines the file it ended in
// may have had none, and the reason was never shown (QA aj).
func TestSaidAboveOnlyWhenShown(t *testing.T) {
	why := errors.New("kermit: filestore: completing d/f: linkat (unnamed file) d/f: disk quota exceeded")
	for _, n := range []int{3, maxErrLines + 10} {
		r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
		for i := range n - 1 {
			r.event(kermit.Event{Kind: kermit.FileFailed, Name: fmt.Sprintf("d/f%d", i), Err: errors.New("not saved")})
		}
		r.event(kermit.Event{Kind: kermit.FileFailed, Name: "d/last", Err: why})
		got := r.saidAbove(why).Error()
		if shown := n <= maxErrLines; (got == why.Error()) == shown {
			t.Errorf("%d files failed: the end says %q", n, got)
		}
	}
}

// "The reason said above" only where the line above said it: a line
// whose words were changed for standard output (review 55 L6) does not
// stand for the error that ended the transfer.
func TestSaidAboveOnlyWhereTheLineSaidIt(t *testing.T) {
	why := errors.New("kermit: f: the file changed while it was sent: " + kermit.NotStoredTail)
	for _, toStdout := range []bool{false, true} {
		var out bytes.Buffer
		r := &reporter{out: &out, start: time.Now(), current: map[string]int64{}, toStdout: toStdout}
		r.event(kermit.Event{Kind: kermit.FileFailed, Name: "f", Err: why})
		got := r.saidAbove(why).Error()
		if (got == why.Error()) != toStdout {
			t.Errorf("to stdout %v: the line %q, then the end %q", toStdout, out.String(), got)
		}
	}
}

// Where several files' lines end with the error that ended the transfer
// (a connection lost with a tree's files unconfirmed), the end says the
// error itself, not "the transfer ended at" the first of them, which is
// not where it ended (QA ap).
func TestSaidAboveNotForSeveral(t *testing.T) {
	why := errors.New("kermit: reading link: closed by the other end without a word (unexpected EOF)")
	for _, n := range []int{1, 3} {
		r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}}
		for i := range n {
			r.event(kermit.Event{Kind: kermit.FileFailed, Name: fmt.Sprintf("d/f%d", i), Err: fmt.Errorf("not confirmed saved: %w", why)})
		}
		if n == 1 {
			// One file told failed twice is one file (review 57b).
			r.event(kermit.Event{Kind: kermit.FileFailed, Name: "d/f0", Err: fmt.Errorf("cut off: %w", why)})
		}
		got := r.saidAbove(why).Error()
		if (got == why.Error()) != (n > 1) {
			t.Errorf("%d files' lines said it: the end says %q", n, got)
		}
	}
}
