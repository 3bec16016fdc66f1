package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"kerf/kermit"
)

// reporter turns engine events into progress lines, JSON events, or
// nothing (output not a terminal).
type reporter struct {
	ctx  context.Context // the command's: a signal's cancel says interrupted
	mu   sync.Mutex
	json *json.Encoder
	// toStdout: the file fetched goes to standard output (a get to -),
	// which keeps nothing to resume.
	toStdout bool
	// localDir, for a get, is the directory it stores into: a file this
	// side failed to store is said to have failed here, there.
	localDir string
	// discarding: a get to /dev/null, which stores nothing: no
	// file_saved (QA: said of a file nowhere).
	discarding bool
	// fromStdin: the one file is standard input (stdin.go), which no
	// --resume can go on with.
	fromStdin bool
	// remover removes the files sent once saved (--remove-source-files).
	remover *sourceRemover
	bar     *progressbar.ProgressBar
	out     io.Writer
	total   int64
	done    int64
	files   int
	failed  []string // names of files skipped or failed, in order
	// failedNow are the names in failed and what was said of them: a
	// directory that fails in two sessions (each sends it for its
	// share's files) is told once (QA); another failure of a name, in
	// other words, is told too (review), and a server tells every one.
	failedNow map[string]string
	// notSavedFailed are the files told failed as not saved under their
	// names (ErrNotSaved, ErrSaveFailed), and whether that took them off
	// the files' count: a FileSaved that follows withdraws the failure.
	notSavedFailed map[string]bool
	// receiverRefused: a file failed by the receiver's doing
	// (kermit.FromReceiver), not this side's.
	receiverRefused bool
	// errLines counts the failed files given a line; errHidden those
	// past maxErrLines, told as a count at the end. lined: the names
	// given one, with what it said, which saidAbove may point back to.
	errLines, errHidden int
	lined               map[string]string
	// serving: a server's reporter, for its whole life: every failure
	// gets its line (an operator reads them as they come).
	serving bool
	// notBegun are the files of a send that stopped before it began
	// them (kermit.ErrNotBegun), named on one line at the end rather than
	// a line each (with --json, an event each).
	notBegun []string
	// unnamed are the files of an interrupted send not named at all (a
	// large tree is not walked again to the end to name them).
	unnamed int
	start   time.Time
	last    time.Time
	// moved is when bytes last moved (or a file began or ended): a
	// transfer silent for stallAfter is said to be so (watchStalls).
	moved      time.Time
	stalled    bool      // the bar says nothing moves
	stallSaid  time.Time // the last progress event of a stall
	stallStop  chan struct{}
	stallEnded bool
	current    map[string]int64
	attempts   map[string]attempt // the files under way: their sizes and where they began
	// oneFile: a get of one file by its name, whose size, once known,
	// is the bar's total.
	oneFile bool
	// planned is, for a send, what each file adds to total: its size
	// less what a resume found there. A file refused, failed or found
	// whole takes its part out, so that the bar ends at its end.
	planned map[string]int64
	// earlier are the bytes moved of files begun again before they
	// were (FileStart again): what the receiver kept of them counts.
	earlier map[string]int64
	// keptBefore is, of each received file under way, what earlier
	// attempts moved that the receiver kept and a later attempt went on
	// from (counted in done already).
	keptBefore map[string]int64
	// startAt is where each file under way began, its resume point (from
	// its FileStart or first progress): of what a begun-again file moved
	// before, the receiver kept at most its last offset less this.
	startAt map[string]int64
	// unsaved are files done (counted) but not yet saved under their
	// names: a failed rename at the group's end, or a send that stopped
	// before the receiver said it saved them (kermit.ErrNotSaved), takes
	// back what they counted; kermit.FileSaved clears them. (A classic
	// receiver says nothing more of a file after its Z: its entry
	// stays.)
	unsaved map[string]int64
	// finished are the files done: a later failure of a name among them
	// is another file's of that name, unless it says this one was not
	// saved after all.
	finished map[string]bool
	// skipped are files skipped or failed, whose late progress events,
	// from the data path, are not counted.
	skipped map[string]bool
	// wanted are the names a GET asked for plainly, unfound how many of
	// them the transfer has not spoken of yet (missingNames).
	wanted  []wantedName
	unfound int
	// wire counts the bytes the data blocks took on the data
	// connections, and says how they travelled smaller than the files
	// ("zstd", "holes", both, or "": wireBytes), known once the data
	// connections are open.
	wire func() (int64, string)
	// channel names what carried the data (control.Client.DataChannel).
	channel func() string
}

// newReporter returns the reporter of a send of files, or with nil of
// a receiving command, whose total is not known.
func newReporter(c *cli.Context, files []kermit.OutgoingFile) *reporter {
	if files == nil {
		r := newSendReporter(c, -1)
		r.planned = nil
		r.remover = nil // a get's files are removed by the server
		return r
	}
	var total int64
	first := map[string]bool{}
	for _, f := range files {
		if !f.Dir && !first[f.Name] {
			first[f.Name] = true
			total += max(f.Size, 0)
		}
	}
	r := newSendReporter(c, total)
	for _, f := range files {
		r.listed(f)
	}
	return r
}

// newSendReporter returns the reporter of a send of total bytes, told
// of each file as it is taken (listed).
func newSendReporter(c *cli.Context, totalBytes int64) *reporter {
	r := &reporter{out: os.Stderr, start: time.Now(), current: map[string]int64{}, ctx: c.Context, planned: map[string]int64{}}
	r.total = totalBytes
	r.json = jsonOutput(c)
	if showsBar(c) {
		r.bar = progressbar.NewOptions64(totalBytes,
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionShowBytes(true),
			progressbar.OptionUseIECUnits(true), // MiB, as the summary line
			progressbar.OptionSetDescription("total"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		// Its clock would start at the first progress, and the first
		// frame show that block over microseconds (hundreds of GiB/s).
		r.bar.StartWithoutRender()
		setLiveBar(r.bar)
	}
	if c.Bool(removeSourceFlag.Name) {
		r.remover = newSourceRemover(r.sourceKept, r.sourceRemoved)
	}
	return r
}

// sourceKept says that a file sent, or found already there, stays here,
// and why (called with r.mu held).
func (r *reporter) sourceKept(name, path, why string) {
	if r.json != nil {
		r.json.Encode(jsonEvent{Event: "source_kept", Name: name, Path: path, Reason: why})
		return
	}
	if r.bar != nil {
		r.bar.Clear()
	}
	fmt.Fprintf(r.out, "kerf: %s: kept here, not removed: %s\n", printable(path), printable(why))
}

// sourceRemoved tells a script that a file sent was removed here.
func (r *reporter) sourceRemoved(name, path string) {
	if r.json != nil {
		r.json.Encode(jsonEvent{Event: "source_removed", Name: name, Path: path})
	}
}

type jsonEvent struct {
	Event  string `json:"event"`
	Name   string `json:"name,omitempty"`
	Size   *int64 `json:"size,omitempty"`
	Bytes  *int64 `json:"bytes,omitempty"` // progress, file_done and done: there, 0 too
	Offset int64  `json:"offset,omitempty"`
	// Kept, on a file_done: of bytes, what the receiver had already past
	// the offset (ranges kept when a data connection stalled), not sent.
	Kept    int64   `json:"kept,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	// Stalled, on a progress event: nothing has moved for this long
	// (said every stallEvery while so).
	Stalled float64 `json:"stalled_seconds,omitempty"`
	CRC32C  string  `json:"crc32c,omitempty"`
	Error   string  `json:"error,omitempty"`
	Reason  string  `json:"reason,omitempty"` // file_skipped, source_kept
	Path    string  `json:"path,omitempty"`   // source_removed, source_kept: the local file
	Rate    float64 `json:"bytes_per_second,omitempty"`
	Wire    *int64  `json:"wire_bytes,omitempty"` // done, with --compress or holes sent as zeros: data bytes as they travelled (0 too)
	Files   *int    `json:"files,omitempty"`      // done: files transferred
	Data    string  `json:"data,omitempty"`       // done: what carried the data (quic, tls, tcp; absent: in-band)
	// Withdrawn, on a file_done or file_saved: the file_error told of
	// this name earlier no longer holds (fetched whole by a take-over,
	// or saved by a later pass), so a script need not keep the rule.
	Withdrawn bool `json:"error_withdrawn,omitempty"`
	// NameBase64 is the exact name, base64, when it is not UTF-8: JSON
	// strings hold only UTF-8, and Name then shows U+FFFD for each
	// stray byte (see exactName).
	NameBase64 string `json:"name_base64,omitempty"`
}

// MarshalJSON adds name_base64 for a name that is not UTF-8.
func (e jsonEvent) MarshalJSON() ([]byte, error) {
	type plain jsonEvent
	e.NameBase64 = exactName(e.Name)
	return json.Marshal(plain(e))
}

// exactName is name in base64 if it is not UTF-8 (a Unix name is bytes),
// else "": what a JSON event adds so that a script gets the exact name.
func exactName(name string) string {
	if utf8.ValidString(name) {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(name))
}

func (r *reporter) event(e kermit.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.remover != nil {
		defer r.remover.event(e) // after the file's own line
	}
	// Copies for the JSON events' pointers: taking e's own fields' would
	// move every event to the heap (two a file).
	size, moved := e.Size, e.Bytes
	switch e.Kind {
	case kermit.FileStart, kermit.FileDone, kermit.FileSkipped, kermit.FileFailed:
		r.spokenOf(e.Name)
	}
	switch e.Kind {
	case kermit.FileStart, kermit.FileDone:
		r.moving()
	case kermit.FileProgress:
		if e.Bytes != r.current[e.Name] {
			r.moving()
		}
	}
	switch e.Kind {
	case kermit.FileStart, kermit.FileProgress:
		if r.attempts == nil {
			r.attempts = map[string]attempt{}
		}
		r.attempts[e.Name] = attempt{size: e.Size, offset: e.Offset}
	case kermit.FileDone, kermit.FileSkipped, kermit.FileFailed:
		delete(r.attempts, e.Name)
	}
	switch e.Kind {
	case kermit.FileStart:
		if n, again := r.current[e.Name]; again {
			// Begun again: whole (its partial was not the start of the
			// file), or from what the receiver kept when another session
			// takes over a lost one's file. One file_start; of what
			// went before, only what the receiver kept counts, as its
			// file_done's offset tells.
			r.done -= n
			if r.earlier == nil {
				r.earlier = map[string]int64{}
			}
			r.earlier[e.Name] += n
			r.current[e.Name] = 0
			if at, ok := r.startAt[e.Name]; ok && !e.Sending && e.Offset < at {
				// Begun again from before where it began (a receiver's
				// partial that was not the start of the file): what
				// came since counts from here. (A sender's FileStart
				// has no offset: it learns it later.) What earlier
				// attempts counted as kept is not.
				r.startAt[e.Name] = max(e.Offset, 0)
				r.done -= r.keptBefore[e.Name]
				r.earlier[e.Name] += r.keptBefore[e.Name]
				delete(r.keptBefore, e.Name)
			} else if !e.Sending && e.Offset > at {
				// Going on from what the receiver kept (a resume after
				// a reconnection): that much of what went before counts
				// now, not at the file's end (QA y: the bar fell from
				// 74 MiB to 0, and came back only at the end).
				kept := min(r.earlier[e.Name], e.Offset-at)
				r.done += kept
				r.earlier[e.Name] -= kept
				if r.startAt == nil {
					r.startAt = map[string]int64{}
				}
				if r.keptBefore == nil {
					r.keptBefore = map[string]int64{}
				}
				r.keptBefore[e.Name] += kept
				r.startAt[e.Name] = e.Offset
			}
			if r.json != nil {
				// Said again, with where it begins now: the first
				// file_start's offset was not used (QA), and after a
				// reconnection its progress counts from the new one
				// (QA y: 98 %, then 14 %, with nothing said between).
				r.json.Encode(jsonEvent{Event: "file_start", Name: e.Name, Size: &size, Offset: e.Offset})
			}
			if e.Sending || e.Size < 0 {
				r.replan(e.Name, e.Size)
			} else {
				// What this attempt brings and what earlier ones kept
				// (review 50: a one-file get's bar went from 300 of 600
				// to 0 of 1000).
				r.replan(e.Name, e.Size-max(e.Offset, 0)+r.keptBefore[e.Name])
			}
			r.showBar()
			break
		}
		r.current[e.Name] = 0
		r.noteStart(e.Name, e.Offset)
		if r.oneFile && r.total < 0 && e.Size >= 0 && len(r.planned) == 0 {
			// The one file a get asked for: its size is the total.
			r.total, r.planned = 0, map[string]int64{e.Name: 0}
		}
		if e.Size >= 0 {
			r.replan(e.Name, e.Size-e.Offset) // the offset was there
		}
		delete(r.skipped, e.Name)
		if r.json != nil {
			r.json.Encode(jsonEvent{Event: "file_start", Name: e.Name, Size: &size, Offset: e.Offset})
		}
	case kermit.FileProgress:
		if r.skipped[e.Name] {
			break
		}
		if _, again := r.earlier[e.Name]; !again {
			r.noteStart(e.Name, e.Offset) // a sender learns it after its FileStart
		}
		r.done += e.Bytes - r.current[e.Name]
		r.current[e.Name] = e.Bytes
		r.showBar()
		if r.json != nil && time.Since(r.last) > 500*time.Millisecond {
			r.last = time.Now()
			r.json.Encode(jsonEvent{Event: "progress", Name: e.Name, Size: &size, Bytes: &moved, Offset: e.Offset, Seconds: time.Since(r.start).Seconds()})
		}
	case kermit.FileDone:
		if e.Again {
			// Told failed before, and got whole by a take-over: not a
			// failure after all.
			r.failed = slices.DeleteFunc(r.failed, func(n string) bool { return n == e.Name })
			delete(r.failedNow, e.Name)
		}
		kept := min(r.earlier[e.Name], max(e.Offset-r.startAt[e.Name], 0))
		// The ranges the receiver kept past the offset (e.Kept, counted
		// in Bytes as they were passed) were moved by this run only as
		// far as its earlier attempts moved more than their prefix;
		// kept from another run, they are not this run's bytes. (The
		// file_done's bytes stay e.Bytes, with its kept beside them.)
		ran := e.Bytes - e.Kept + min(r.earlier[e.Name]-kept, e.Kept)
		keptBefore := r.keptBefore[e.Name]
		delete(r.earlier, e.Name)
		delete(r.startAt, e.Name)
		delete(r.keptBefore, e.Name)
		r.done += ran - r.current[e.Name] + kept
		delete(r.current, e.Name)
		r.files++
		r.replan(e.Name, ran+kept+keptBefore)
		r.showBar()
		if r.unsaved == nil {
			r.unsaved, r.finished = map[string]int64{}, map[string]bool{}
		}
		r.unsaved[e.Name] = ran + kept
		r.finished[e.Name] = true
		if r.json == nil && r.bar == nil {
			break // quiet: nothing to print
		}
		secs := e.Duration.Seconds()
		ev := jsonEvent{Event: "file_done", Name: e.Name, Size: &size, Bytes: &moved, Offset: e.Offset, Kept: e.Kept, Seconds: secs, Withdrawn: e.Again}
		// Only the data channel computes a CRC; classic transfers leave it
		// zero, and a zero printed would be a false claim. (A real CRC of
		// zero, one file in 2^32, is left out too: absent, never wrong.)
		if e.CRC32C != 0 {
			ev.CRC32C = fmt.Sprintf("%08x", e.CRC32C)
		}
		if secs > 0 {
			ev.Rate = float64(e.Bytes-e.Kept) / secs
		}
		if r.json != nil {
			r.json.Encode(ev)
		} else if r.bar != nil {
			r.bar.Clear()
			fmt.Fprintf(r.out, "%-40s %10s  %s\n", printable(e.Name), humanBytes(e.Bytes), humanRate(ev.Rate))
		}
	case kermit.SourceKept:
		// A get's --remove-source-files the server could not carry out
		// for this file (QA ar: said nowhere but in the server's log).
		why := ""
		if e.Err != nil {
			why = e.Err.Error()
		}
		if r.json != nil {
			r.json.Encode(jsonEvent{Event: "source_kept", Name: e.Name, Reason: why})
		} else {
			if r.bar != nil {
				r.bar.Clear()
			}
			fmt.Fprintf(r.out, "kerf: %s: kept on the server, not removed: %s\n", printable(e.Name), printable(why))
		}
	case kermit.Reconnecting:
		// Said on stderr by the log; a script reading --json gets it too.
		if r.json != nil {
			msg := ""
			if e.Err != nil {
				msg = e.Err.Error()
			}
			r.json.Encode(jsonEvent{Event: "reconnecting", Error: msg, Seconds: e.Duration.Seconds()})
		}
	case kermit.FileSaved:
		uncounted, withdrawn := r.notSavedFailed[e.Name]
		if withdrawn {
			// Told not saved under its name (the group's renames
			// failed), and saved since by a later pass: not a failure
			// after all (QA: exit 4 naming 258 files that were all
			// there).
			delete(r.notSavedFailed, e.Name)
			if uncounted {
				r.files++
			}
			r.failed = slices.DeleteFunc(r.failed, func(n string) bool { return n == e.Name })
			delete(r.failedNow, e.Name)
		}
		// Done with: a send's memory follows the files not yet saved.
		delete(r.unsaved, e.Name)
		delete(r.finished, e.Name)
		delete(r.planned, e.Name)
		if r.json != nil && !r.discarding {
			// For scripts that act on files once they are safe: sooner
			// than done, every 4,096 files of a long group.
			r.json.Encode(jsonEvent{Event: "file_saved", Name: e.Name, Withdrawn: withdrawn})
		}
	case kermit.FileSkipped, kermit.FileFailed:
		// Data sent before the answer came (a small file goes at once)
		// was thrown away, or the file is not there: its bytes do not
		// count, and neither does what its late progress says.
		notSaved := errors.Is(e.Err, kermit.ErrNotSaved) || errors.Is(e.Err, kermit.ErrSaveFailed)
		_, begun := r.current[e.Name]
		delete(r.startAt, e.Name)
		if notSaved && e.Kind == kermit.FileFailed {
			if r.notSavedFailed == nil {
				r.notSavedFailed = map[string]bool{}
			}
			_, counted := r.unsaved[e.Name]
			r.notSavedFailed[e.Name] = counted // taken off below
		}
		if n, ok := r.unsaved[e.Name]; ok && notSaved {
			// Done, then not saved under its name (the group's renames
			// failed, or a send stopped before the receiver said it
			// saved it): neither its file nor its bytes count.
			r.done -= n
			r.files--
			delete(r.unsaved, e.Name)
			delete(r.finished, e.Name)
		}
		if !r.finished[e.Name] {
			// (Else another file of the name, refused: "same name as
			// ..., sent already". The first stays counted.)
			r.done -= r.current[e.Name] + r.keptBefore[e.Name]
			delete(r.current, e.Name)
			delete(r.keptBefore, e.Name)
			r.replan(e.Name, 0)
			r.showBar()
		}
		if begun {
			// Only a file begun has progress to come (one found whole
			// at its F, as most of a rerun's are, is not kept).
			if r.skipped == nil {
				r.skipped = map[string]bool{}
			}
			r.skipped[e.Name] = true
		}
		if errors.Is(e.Err, kermit.ErrPassedOver) {
			// No file to copy (a FIFO on the server, say): said, as
			// the sending client says of its own, and not a failure.
			if r.json != nil {
				r.json.Encode(jsonEvent{Event: "file_skipped", Name: e.Name, Reason: e.Err.Error()})
			} else {
				if r.bar != nil {
					r.bar.Clear()
				}
				fmt.Fprintf(r.out, "kerf: skipping %s: %s\n", printable(e.Name), printable(e.Err.Error()))
			}
			break
		}
		if errors.Is(e.Err, kermit.ErrAlreadyThere) || errors.Is(e.Err, kermit.ErrDeclined) {
			// A resume found the file whole, or a classic receiver's
			// collision setting kept its copy: not a failure. Only the
			// first is there as sent, and counts among the files.
			if errors.Is(e.Err, kermit.ErrAlreadyThere) {
				r.files++
			}
			if r.json != nil {
				r.json.Encode(jsonEvent{Event: "file_skipped", Name: e.Name, Size: &size, Reason: e.Err.Error()})
			} else if r.bar != nil {
				r.bar.Clear()
				what := "already there"
				if errors.Is(e.Err, kermit.ErrDeclined) {
					what = "declined by the receiver"
				}
				fmt.Fprintf(r.out, "%-40s %10s  %s\n", printable(e.Name), humanBytes(max(size, 0)), what)
			} else if errors.Is(e.Err, kermit.ErrDeclined) {
				// Said without a terminal too: the file is not where it
				// was sent (QA: silent, exit 0). A rerun's files found
				// whole, by the thousand, are not.
				fmt.Fprintf(r.out, "kerf: %s: %s\n", printable(e.Name), e.Err)
			}
			break
		}
		said := ""
		if e.Err != nil {
			said = e.Err.Error()
		}
		if was, ok := r.failedNow[e.Name]; ok && was == said && !r.serving {
			break // told already
		}
		if r.failedNow == nil {
			r.failedNow = map[string]string{}
		}
		r.failedNow[e.Name] = said
		r.failed = append(r.failed, e.Name)
		if kermit.FromReceiver(e.Err) {
			r.receiverRefused = true
		}
		if errors.Is(e.Err, kermit.ErrNotBegun) && r.json == nil {
			r.notBegun = append(r.notBegun, e.Name)
			break
		}
		msg := "skipped"
		if e.Err != nil {
			msg = e.Err.Error()
			var ie *interruptError
			if errors.As(interrupted(r.ctx, e.Err), &ie) && errors.Is(e.Err, context.Canceled) {
				msg = "interrupted: what came is kept for --resume"
				if !errors.Is(e.Err, kermit.ErrPartialKept) {
					// Nothing came, or the store keeps none (a small
					// file received unnamed): sent again whole (review).
					msg = "interrupted: nothing of it is kept; --resume sends it again"
				}
				if r.toStdout {
					msg = "interrupted: what went to standard output is not the whole file"
				}
				if e.Sending {
					// Nothing came here: what the receiver keeps is
					// its own (QA: said by a sender).
					msg = "interrupted: a receiver that keeps partials lets --resume go on from what it got"
				}
				if e.Sending && errors.Is(e.Err, kermit.ErrNotSaved) {
					// Sent whole and checked there, only its saving
					// not confirmed: not cut off (QA at: 105 files on
					// the server whole were said cut).
					msg = "interrupted: " + kermit.ErrNotSaved.Error()
				}
				if r.fromStdin {
					msg = "interrupted: " + stdinNotResumable
				}
			}
		}
		if r.toStdout {
			// The sender's words for a file that changed under it
			// speak of a stored copy: here what went out is not whole
			// (QA: "not stored" after 94 MB had gone to the pipe).
			msg = strings.Replace(msg, kermit.NotStoredTail, "what went to standard output is not one version of the file: transfer it again", 1)
		}
		// "NAME: kermit: NAME: …" says the name twice (QA).
		msg = strings.TrimPrefix(msg, "kermit: "+e.Name+": ")
		if r.localDir != "" && !e.Sending && localFailure(e.Err) {
			// This side's file system refused it: said so, and where
			// (QA ar: "openat x: permission denied" named neither).
			msg += fmt.Sprintf(" (here, in %s)", r.localDir)
		}
		if r.json != nil {
			r.json.Encode(jsonEvent{Event: "file_error", Name: e.Name, Error: msg})
		} else if r.errLines < maxErrLines || r.serving {
			// A lost server can fail thousands of files at once: the
			// first ones each get a line, the rest a count at the end.
			r.errLines++
			if r.bar != nil {
				r.bar.Clear()
			}
			fmt.Fprintf(r.out, "kerf: %s: %s\n", printable(e.Name), printable(plainWords(msg)))
			if r.lined == nil {
				r.lined = map[string]string{}
			}
			r.lined[e.Name] = msg
		} else {
			r.errHidden++
		}
	}
}

// localFailure reports whether err, a received file's failure, is this
// side's file system's: an error of a file operation or of room here,
// or the file store's own words (filestore's errors say "filestore:"),
// not the sender's (an E, or its reason for not sending: text only).
func localFailure(err error) bool {
	if err == nil || kermit.FromReceiver(err) || errors.Is(err, context.Canceled) {
		return false
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "not sent by the peer") {
		return false
	}
	return errors.As(err, new(*fs.PathError)) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || strings.Contains(msg, "filestore: ")
}

// noteStart records off as where name began, the first time it is told
// (its first attempt's).
func (r *reporter) noteStart(name string, off int64) {
	if off <= 0 {
		return
	}
	if r.startAt == nil {
		r.startAt = map[string]int64{}
	}
	if _, ok := r.startAt[name]; !ok {
		r.startAt[name] = off
	}
}

// maxErrLines is how many failed files get a line of their own.
const maxErrLines = 50

// listed tells a send's reporter of f, taken to be sent: its size is
// its part of the total (that of the first file of a name), until the
// transfer says otherwise (replan).
func (r *reporter) listed(f kermit.OutgoingFile) {
	if f.Dir {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.planned[f.Name]; !dup {
		r.planned[f.Name] = max(f.Size, 0)
	}
}

// replan makes name's part of a send's total n bytes.
func (r *reporter) replan(name string, n int64) {
	if old, ok := r.planned[name]; ok {
		r.total += n - old
		r.planned[name] = n
	}
}

// showBar brings the bar to the bytes done and the total.
func (r *reporter) showBar() {
	if r.bar == nil {
		return
	}
	if r.total < 0 {
		r.bar.Set64(r.done)
		return
	}
	if st := r.bar.State(); st.CurrentNum >= st.Max {
		// A full bar ignores what is taken away: room first.
		r.bar.ChangeMax64(st.CurrentNum + 1)
	}
	r.bar.Set64(r.done)
	r.bar.ChangeMax64(max(r.total, 1)) // 0 would make it a spinner
}

// wantedName is a name a GET asked for plainly (expectNames), in the
// form a classic Kermit's conversion gives it (convertedForm).
type wantedName struct {
	base, form string
	found      bool // a file of it was spoken of
}

// expectNames makes the reporter watch, for missingNames, for the names
// of specs given plainly (no wildcard): it notes which of them the
// transfer speaks of as it goes, rather than keeping every name it
// hears (memory independent of the files of a GET).
func (r *reporter) expectNames(specs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, spec := range specs {
		base := specBase(spec)
		if base == "." || base == "/" || base == "" || hasWildcard(base) || braceList(spec) {
			continue
		}
		base = unescapeName(base)
		r.wanted = append(r.wanted, wantedName{base: base, form: convertedForm(base)})
		r.unfound++
	}
}

// spokenOf marks the wanted names a file the transfer speaks of
// satisfies: the name itself, a tree under it, or (from a classic
// server that sends paths) a path ending in it, compared as a classic
// server may convert names (case, and what is not a letter, digit or
// dot), so that a file that came under its converted name is not taken
// for missing.
func (r *reporter) spokenOf(name string) {
	if r.unfound == 0 {
		return
	}
	n := convertedForm(name)
	for i := range r.wanted {
		w := &r.wanted[i]
		if !w.found && (n == w.form || strings.HasPrefix(n, w.form+"/") || strings.HasSuffix(n, "/"+w.form) || strings.Contains(n, "/"+w.form+"/")) {
			w.found = true
			r.unfound--
		}
	}
}

// missingNames reports, as failed, each name expectNames was given of
// which nothing arrived, not even a refusal: asked for several names, a
// classic Kermit server sends those it finds and says nothing of the
// others (a kerf server announces them, so the caller asks only of a
// classic one).
func (r *reporter) missingNames() {
	r.mu.Lock()
	var missing []string
	for _, w := range r.wanted {
		if !w.found {
			missing = append(missing, w.base)
		}
	}
	r.mu.Unlock()
	for _, base := range missing {
		r.event(kermit.Event{Kind: kermit.FileFailed, Name: base, Err: errors.New("not sent by the server (it has no such file?)")})
	}
}

// refusedSpec reports the file a GET of spec (one name, as specGroups
// gives it) was refused with err: failed, named as it would have come.
func (r *reporter) refusedSpec(spec string, err error) {
	r.event(kermit.Event{Kind: kermit.FileFailed, Name: specBase(spec), Err: err})
}

// specBase is the last element of a GET's name, as its file would come;
// one in braces (C-Kermit's way with spaces, and SpecWord's) stands for
// the name inside.
func specBase(spec string) string {
	if len(spec) > 1 && spec[0] == '{' && spec[len(spec)-1] == '}' {
		spec = spec[1 : len(spec)-1]
	}
	return path.Base(strings.TrimSuffix(spec, "/"))
}

// braceList reports whether spec is a list in braces ("{a,b}"), which a
// classic server takes for a pattern, each name a file (QA: C-Kermit's
// sent a and b, and kerf said "a,b" was not sent), not one name quoted
// as "{my file}" is.
func braceList(spec string) bool {
	return len(spec) > 1 && spec[0] == '{' && spec[len(spec)-1] == '}' && strings.Contains(spec, ",")
}

// convertedForm is a name lowered, with what is not a letter, digit, dot
// or slash made "_": how it compares whatever a classic Kermit's name
// conversion did to it.
func convertedForm(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '/') {
			b[i] = '_'
		}
	}
	return string(b)
}

// notReceived is the error of a receiving command whose transfer ended
// without error although files of it were refused, failed or canceled:
// the engine goes on with the next file, so only the events tell.
func (r *reporter) notReceived() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d file(s) not received: %s", len(r.failed), kermit.NameList(r.failed))
}

// end closes a transfer command with its engine's err: a receiving one
// also fails if files of it were not received (the engine goes on after
// a refused file), the total line or JSON event goes out, and a failure
// exits as a transfer failure.
func (r *reporter) end(err error, receiving bool) error {
	if err == nil && receiving {
		err = r.notReceived()
	}
	err = r.saidAbove(err)
	r.countHidden()
	r.namesNotBegun()
	if err = r.finish(err); err != nil {
		return transferErr(err)
	}
	return nil
}

// failures is how many files stand failed (a withdrawn failure is not).
func (r *reporter) failures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failed)
}

// saidAbove is err, shown as a short line where a file's failure line
// said it already (the error that ended a transfer is also the failure
// of the file it ended in: QA saw it twice, in full); errors.Is and As
// still find err. With --json each event says its own.
func (r *reporter) saidAbove(err error) error {
	if err == nil || r.json != nil {
		return err
	}
	var ie *interruptError
	if errors.As(interrupted(r.ctx, err), &ie) {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	text := err.Error()
	var said *saidError
	for _, name := range r.failed {
		if said != nil && said.name == name {
			continue // (one file told failed twice)
		}
		// (Only a line shown: past maxErrLines, the file that ended
		// the transfer may have had none, and "the reason said above"
		// pointed at nothing; QA aj.)
		// And only a line that said it: one whose words were changed
		// (an interruption's, a standard output's) does not (review 55).
		line, shown := r.lined[name]
		if s := r.failedNow[name]; s != "" && shown && strings.HasSuffix(s, text) &&
			strings.HasSuffix(line, strings.TrimPrefix(text, "kermit: "+name+": ")) {
			if said != nil {
				// Several files' lines end so (a connection lost under
				// a tree's unconfirmed files): the first is not where
				// the transfer ended, and the cause is said once,
				// plainly, at the end (QA ap).
				return err
			}
			said = &saidError{err, name}
		}
	}
	if said != nil {
		return said
	}
	return err
}

// saidError is an error a file's failure line said already.
type saidError struct {
	err  error
	name string
}

func (e *saidError) Error() string {
	return "the transfer ended at " + e.name + ", for the reason said above"
}
func (e *saidError) Unwrap() error { return e.err }

// countHidden says how many failed files got no line of their own
// (past maxErrLines).
func (r *reporter) countHidden() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.errHidden == 0 {
		return
	}
	if r.bar != nil {
		r.bar.Clear()
	}
	fmt.Fprintf(os.Stderr, "kerf: %d more file(s) failed, not shown one by one (--json tells each)\n", r.errHidden)
}

// notWalked tells of n files of an interrupted send that were not
// named (localList.notWalked).
func (r *reporter) notWalked(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unnamed += n
}

// namesNotBegun names, on one line, the files a send stopped before it
// began (the engine reports each: kermit.ErrNotBegun), the first ones
// if there are many.
func (r *reporter) namesNotBegun() {
	r.mu.Lock()
	defer r.mu.Unlock()
	rest := r.notBegun
	if r.bar != nil && (len(rest) > 0 || r.unnamed > 0) {
		r.bar.Clear()
	}
	if len(rest) > 0 {
		fmt.Fprintf(os.Stderr, "kerf: %d file(s) not sent, the transfer having ended first: %s\n", len(rest), printable(kermit.NameList(rest)))
	}
	if r.unnamed == 0 {
		return
	}
	if r.json != nil {
		n := r.unnamed
		r.json.Encode(jsonEvent{Event: "files_not_begun", Files: &n})
		return
	}
	fmt.Fprintf(os.Stderr, "kerf: about %d more file(s) of the tree not sent, not named: interrupted, the rest of the tree was not walked\n", r.unnamed)
}

// finish prints the total line, or the closing JSON event; it returns
// err, marked as reported when that event carried it.
// stallAfter is how long nothing moves before the bar says so;
// stallEvery, how often --json says so meanwhile.
const (
	stallAfter = 3 * time.Second
	stallEvery = 5 * time.Second
)

// moving notes that the transfer moved now, and starts watching it for
// stalls (a link down, a peer frozen: QA, the bar stood for a minute
// at its last rate and time left, and --json said nothing).
func (r *reporter) moving() {
	r.moved = time.Now()
	if r.stalled {
		r.stalled = false
		r.bar.Describe("total")
	}
	if r.stallStop == nil && !r.serving && (r.bar != nil || r.json != nil) {
		r.stallStop = make(chan struct{})
		go r.watchStalls(r.stallStop)
	}
}

func (r *reporter) watchStalls(stop chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			r.mu.Lock()
			r.checkStall(now)
			r.mu.Unlock()
		}
	}
}

// checkStall says, as of now, that nothing has moved for a while if so:
// on the bar, and with --json as a progress event of a file under way
// every stallEvery, with stalled_seconds.
// attempt is a file under way, as its last event had it: its size (-1:
// not known) and where this attempt began in it.
type attempt struct{ size, offset int64 }

func (r *reporter) checkStall(now time.Time) {
	if len(r.current) == 0 || r.moved.IsZero() {
		return
	}
	d := now.Sub(r.moved)
	if d < stallAfter {
		return
	}
	if r.bar != nil {
		r.stalled = true
		r.bar.Describe(fmt.Sprintf("total, nothing moved for %v", d.Truncate(time.Second)))
	}
	if r.json != nil && now.Sub(r.stallSaid) >= stallEvery {
		r.stallSaid = now
		name := slices.Min(slices.Collect(maps.Keys(r.current)))
		moved := r.current[name]
		a, ok := r.attempts[name]
		ev := jsonEvent{Event: "progress", Name: name, Bytes: &moved, Offset: a.offset, Seconds: now.Sub(r.start).Seconds(), Stalled: d.Seconds()}
		if ok && a.size >= 0 {
			ev.Size = &a.size // (QA y: left out just when it mattered)
		}
		r.json.Encode(ev)
	}
}

func (r *reporter) finish(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stallStop != nil && !r.stallEnded {
		close(r.stallStop) // (kept: no watcher starts again)
		r.stallEnded = true
	}
	err = interrupted(r.ctx, err)
	secs := time.Since(r.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(r.done) / secs
	}
	var wire int64
	how := ""
	if r.wire != nil {
		if wire, how = r.wire(); how == "" {
			wire = 0
		}
	}
	if r.bar != nil {
		r.bar.Finish()
		note := ""
		if how != "" {
			note = fmt.Sprintf(" (%s on the wire, %s)", humanBytes(wire), how)
		}
		fmt.Fprintf(r.out, "%d file(s), %s%s in %.2fs, %s\n", r.files, humanBytes(r.done), note, secs, humanRate(rate))
	}
	if r.json != nil {
		files := r.files
		ev := jsonEvent{Event: "done", Bytes: &r.done, Files: &files, Seconds: secs, Rate: rate}
		if how != "" {
			ev.Wire = &wire // (a file all holes: 0, said)
		}
		if r.channel != nil {
			ev.Data = r.channel()
		}
		if err != nil {
			ev.Event, ev.Error = "error", err.Error()
			err = &jsonReported{err}
		}
		r.json.Encode(ev)
	}
	return err
}

// skippedLocal reports the files a local walk passed over: with --json
// as file_skipped events (the reason saying what they are), else a line
// each on stderr. They are not failures: rsync -r and scp -r pass over
// them too.
func (r *reporter) skippedLocal(skips []localSkip) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range skips {
		if r.json != nil {
			r.json.Encode(jsonEvent{Event: "file_skipped", Name: s.path, Reason: s.why})
			continue
		}
		if r.bar != nil {
			r.bar.Clear()
		}
		fmt.Fprintf(r.out, "kerf: skipping %s: %s\n", printable(s.path), s.why)
	}
}

// jsonReported marks an error already printed as a JSON error event.
type jsonReported struct{ error }

func (e *jsonReported) Unwrap() error { return e.error }

// showsBar says whether a transfer shows a progress bar (which needs
// the total bytes before it begins): not with --json or -q, nor where
// standard error is not a terminal, nor where that terminal is the
// line (serial --stdio from a terminal: QA, the bar went onto the
// Kermit line).
func showsBar(c *cli.Context) bool {
	stdioTerminal := c.Bool("stdio") && (term.IsTerminal(int(os.Stdin.Fd())) || term.IsTerminal(int(os.Stdout.Fd())))
	return !c.Bool("json") && !c.Bool("quiet") && term.IsTerminal(int(os.Stderr.Fd())) && !stdioTerminal
}

// jsonOutput is the encoder of --json events on stdout, or nil.
func jsonOutput(c *cli.Context) *json.Encoder {
	if !c.Bool("json") {
		return nil
	}
	return json.NewEncoder(os.Stdout)
}

// jsonErrors wraps the action of a command that talks to a peer so that
// with --json every failure, a usage or connection error as much as a
// failed transfer, ends its output with an error event, as a failed
// transfer's does; stderr still has the message and the exit code says
// which kind it was.
// notJSONError is an error said on stderr as it is, even with --json:
// one whose JSON would go where something else must (a get to standard
// output with --json: QA, the error was written where the file would be).
type notJSONError struct{ error }

func (e *notJSONError) Unwrap() error { return e.error }

func jsonErrors(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		err := interrupted(c.Context, action(c))
		var done *jsonReported
		var plain *notJSONError
		if enc := jsonOutput(c); enc != nil && err != nil && !errors.As(err, &done) && !errors.As(err, &plain) {
			enc.Encode(jsonEvent{Event: "error", Error: err.Error()})
			err = &jsonReported{err} // once, whatever wraps this
		}
		return err
	}
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func humanRate(r float64) string { return humanBytes(int64(r)) + "/s" }

func logger(c *cli.Context) *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(c)}))
}

// logLevel is --log-level's (checked by checkGlobalFlags), warn if unset.
func logLevel(c *cli.Context) slog.Level {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		lvl = slog.LevelWarn
	}
	return lvl
}

// clientLogger is a client command's logger: at warn and above its
// records are notes in kerf's words (noteHandler); asked for info or
// debug, slog's records as a server writes them.
func clientLogger(c *cli.Context) *slog.Logger {
	if lvl := logLevel(c); lvl >= slog.LevelWarn {
		return slog.New(&noteHandler{level: lvl, out: writeNote})
	}
	return logger(c)
}

// byReceiver reports whether a file failed by the receiver's doing.
func (r *reporter) byReceiver() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.receiverRefused
}
