package kermit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"kerf/framing"
	"kerf/internal/holes"
)

// Send sends files as one file group (S F A D Z ... B), starting a new
// transaction at sequence number 0.
func (s *Session) Send(ctx context.Context, files []OutgoingFile) error {
	return s.sendFrom(ctx, sliceSource(files))
}

// SendFrom sends, as one file group, the files next hands out, until it
// says there are no more. Several sessions may share one next (it must
// then be safe for concurrent use; see SendParallel): a file taken is
// this session's to send or report, one never taken is the caller's.
func (s *Session) SendFrom(ctx context.Context, next func() (OutgoingFile, bool)) error {
	return s.sendFrom(ctx, fileSource{next: next})
}

// fileSource hands out the files of a group one at a time; rest, if
// set, returns those never handed out, for the session to report as not
// begun when the group fails.
type fileSource struct {
	next func() (OutgoingFile, bool)
	rest iter.Seq[OutgoingFile]
}

func sliceSource(files []OutgoingFile) fileSource {
	i := 0
	return fileSource{
		next: func() (OutgoingFile, bool) {
			if i >= len(files) {
				return OutgoingFile{}, false
			}
			i++
			return files[i-1], true
		},
		rest: func(yield func(OutgoingFile) bool) {
			for _, f := range files[i:] {
				if !yield(f) {
					return
				}
			}
		},
	}
}

func (s *Session) sendFrom(ctx context.Context, src fileSource) error {
	defer s.flush()
	s.resetNegotiation()
	if err := s.sendInit(ctx, 'S'); err != nil {
		if src.rest != nil {
			s.notBegun(src.rest, nil)
		}
		return s.abort(sendInitError{fmt.Errorf("kermit: send-init: %w", err)})
	}
	if err := s.sendGroup(ctx, src); err != nil {
		return s.abort(err)
	}
	return nil
}

// sendInit sends S (or I) with our parameters and applies the agreement.
func (s *Session) sendInit(ctx context.Context, typ byte) error {
	mine := myParams(&s.cfg, false)
	if r := s.peerRept; r != 0 && r != mine.QCTL && r != mine.QBIN {
		mine.REPT = r // (peerRept)
	}
	switch {
	case s.textReply && s.data == nil:
		mine.Capas2 &^= framing.Cap2DualChannel // (forText)
	case s.cfg.Dual != nil && s.data == nil:
		mine.Ext = s.cfg.Dual.Offer("")
	}
	sl, err := s.queue(ctx, typ, mine.Marshal(), 0)
	if err != nil {
		return err
	}
	if err := s.await(ctx, sl); err != nil {
		return err
	}
	s.staleInitAck = nil
	if typ == 'I' && sl.sends > 1 {
		// Sent more than once: an ACK of an earlier copy may still
		// come, with the sequence number (0) of the command that
		// follows, and must not be taken for its answer.
		s.staleInitAck = sl.ackData
	}
	peer, err := framing.ParseParams(sl.ackData)
	if err != nil {
		return fmt.Errorf("%w: peer's send-init: %v", ErrProtocol, err)
	}
	if peer.Capas2&capas2RawOK == 0 && isPrefixChar(peer.REPT) {
		s.peerRept = peer.REPT // (one that answers with its own is heard next time)
	}
	n := negotiate(&s.cfg, mine, peer, true)
	s.apply(n, typ)
	s.sw.size = n.window
	s.cfg.Log.Debug("negotiated", "check", n.check, "window", n.window, "maxdata", n.maxData,
		"streaming", n.streaming, "attrs", n.attrs, "dual", n.dual, "kerfpeer", n.peerKerf, "lengthframed", n.out.LengthFramed, "rept", string(n.out.REPT))
	return s.openDual(ctx)
}

// sendGroup sends the files and the closing B, after S has been agreed.
func (s *Session) sendGroup(ctx context.Context, src fileSource) (err error) {
	s.cancelFile.Store(false)
	s.cancelGroup.Store(false)
	s.groupFailed = nil
	s.sending = s.sending[:0]
	s.openedOf = ""
	s.unsavedSent = s.unsavedSent[:0]
	atEnd := false // the B sent: an E now is the receiver failing to save
	defer s.closeAwaitingZ()
	defer func() {
		// Files begun and not ended when the group fails did not get
		// there: each is reported, not just the group's error; and so
		// is each file not begun.
		if err != nil {
			err = s.noDirectoryHint(err, atEnd)
			// The error may name another file (the one whose data
			// failed): say it is the transfer's.
			why := fmt.Errorf("not sent, the transfer having stopped: %w", err)
			// Part of one the receiver took (its F answered) may have
			// come, and be kept: "not sent" alone misled (QA), and said
			// of one refused at its F the rest would (review).
			partly := fmt.Errorf("not sent whole, the transfer having stopped (a receiver that keeps partials lets --resume go on from what came): %w", err)
			unsure := fmt.Errorf("not confirmed: its data and end went out, but the transfer stopped before the receiver answered (it may or may not have stored it; --resume finds out): %w", err)
			if pe := (*PeerError)(nil); errors.As(err, &pe) {
				// It did answer, with an error, which may be this file's
				// or one after it (QA s: C-Kermit's "Error writing
				// data" was said to be no answer).
				unsure = fmt.Errorf("not confirmed: its data and end went out, and the receiver then stopped the transfer with an error (it may or may not have stored it; --resume finds out): %w", err)
			}
			// Files are sent one after another, and each that stays
			// under way had its Z queued before the next began; only the
			// last may have stopped short of it.
			// Files the receiver verified whole, not yet saved under
			// their names when the group stopped (a kerf receiver saves
			// them at its end): told, so that none counts as there.
			unsaved := fmt.Errorf("%w: %w", ErrNotSaved, err)
			if pe := (*PeerError)(nil); atEnd && errors.As(err, &pe) {
				unsaved = &savingFailedError{err}
			}
			for _, f := range s.unsavedSent {
				s.event(Event{Kind: FileFailed, Name: f.name, Size: f.size, Sending: true, Path: f.path,
					Err: &CutOffError{unsaved}})
			}
			s.unsavedSent = s.unsavedSent[:0]
			sending := slices.Clone(s.sending)
			for i, f := range sending {
				if f.flush != nil {
					f.flush() // what went counts exactly (progress)
				}
				e := Event{Kind: FileFailed, Name: f.name, Err: &CutOffError{why}, Sending: true, Path: f.path}
				if i < len(sending)-1 || s.lastZQueued {
					e.Err = &CutOffError{unsure}
				} else if s.openedOf == f.name && f.size < 0 {
					// Of no announced length: a stream (standard
					// input), which no resume can go on with; a kerf
					// receiver keeps nothing of it.
					e.Err = &CutOffError{fmt.Errorf("not sent whole, the transfer having stopped (read from a stream, it cannot be resumed: send it again): %w", err)}
				} else if s.openedOf == f.name {
					e.Err = &CutOffError{partly}
				}
				s.event(e)
			}
			if src.rest != nil {
				s.notBegun(src.rest, s.sending)
			}
		}
		s.sending = s.sending[:0]
	}()
	var failed []string
	var firstFailure error
	begun, refusedOrCut := false, false
	for !s.cancelGroup.Load() {
		f, ok := src.next() // reported by its own events from here on
		if !ok {
			break
		}
		if f.Dir {
			if f.Filled && !s.neg.dirAttrs {
				continue // its files make it
			}
			if err := s.sendDir(ctx, f); err != nil {
				return err
			}
			begun = true
			continue
		}
		if err := s.sendFile(ctx, f); err != nil {
			var skip *skipError
			if errors.As(err, &skip) {
				failed = append(failed, f.Name)
				if firstFailure == nil && skip.before {
					firstFailure = skip.err
				} else if !skip.before {
					refusedOrCut = true
				}
				continue
			}
			return err
		}
		begun = true
	}
	if !begun && !refusedOrCut && firstFailure != nil && !s.neg.peerKerf && !s.cancelGroup.Load() {
		// Nothing of the group went, every file failing here before
		// it began, and a classic peer hears of no file's failure (a
		// kerf peer did, announceUnsent): an E with the first
		// failure's words, not an empty group it would take for a
		// transfer that failed for no reason (QA z: C-Kermit's GET of
		// an unreadable file said nothing; a missing one's E said
		// why). A file the peer refused or canceled is its own doing,
		// and its group ends as ever (review 50).
		s.errorPacket(peerText(firstFailure))
		return &toldError{fmt.Errorf("%w: %w", &GroupError{Failed: failed}, firstFailure)}
	}
	sl, err := s.queue(ctx, 'B', s.unnameableReport(), 0)
	if err != nil {
		return err
	}
	atEnd = true
	if err := s.await(ctx, sl); err != nil {
		if !s.endUnanswered(sl, err) {
			return err
		}
	}
	// The B's ACK: the receiver has saved every file of the group.
	s.reportSaved()
	if err := s.drain(ctx); err != nil {
		return err
	}
	s.cfg.Log.Debug("group sent", "stats", fmt.Sprintf("%+v", s.stats), "wire", s.c.written, "srtt", s.rtt.srtt, "rto", s.rtt.rto)
	if s.cancelGroup.Load() {
		return &endedError{ErrCanceled}
	}
	failed = append(failed, s.groupFailed...)
	if len(failed) > 0 {
		return &GroupError{Failed: failed}
	}
	return nil
}

// endUnanswered reports whether a group whose B went unanswered after
// every retry (err) is sent all the same, and if so takes the B off the
// window: a classic receiver confirms each file with its Z's ACK, so
// with none of them left unconfirmed only the group's end is in doubt.
// The receiver has most likely ended, its ACK of the B lost on a noisy
// line (C-Kermit leaves at once; QA: BER 1e-3, the file whole, C-Kermit
// exit 0, kerf exit 4 after 21 tries of the B). A kerf receiver's ACK of
// the B says its files are saved, and it answers a B sent again, so
// there the error stands.
func (s *Session) endUnanswered(b *slot, err error) bool {
	if s.neg.peerKerf || !errors.Is(err, ErrTooManyRetries) || len(s.sending) > 0 || len(s.unsavedSent) > 0 {
		return false
	}
	for i, seq := 0, s.sw.lo; i < s.sw.count; i, seq = i+1, (seq+1)%64 {
		if o := s.sw.slots[seq]; o != nil && o != b && !o.acked {
			return false
		}
	}
	s.cfg.Log.Warn("the receiver did not answer the end of the group; it confirmed every file, so they are sent", "err", err)
	b.acked = true
	s.retries, s.damage = 0, 0
	_, serr := s.slide()
	return serr == nil && s.sw.count == 0
}

// sentFile is what a sender keeps of a file the receiver has verified,
// until it says it saved it (Session.unsavedSent).
type sentFile struct {
	name, path string
	size       int64
	// flush reports the bytes its data path moved so far (progress),
	// nil if none.
	flush func()
}

// setFlush gives the file under way named name its progress flush.
func (s *Session) setFlush(name string, flush func()) {
	for i := len(s.sending) - 1; i >= 0; i-- {
		if s.sending[i].name == name {
			s.sending[i].flush = flush
			return
		}
	}
}

// ErrNotSaved is why a file sent to a kerf receiver, and verified there
// whole, is not counted as there: the transfer stopped before the
// receiver confirmed it saved under its name (at the group's end). It
// is most likely there, complete, under its temporary name; a resume
// confirms it without sending it again.
var ErrNotSaved = errors.New("not confirmed saved: the receiver had it whole, but the transfer stopped before it said the file was saved under its name (--resume confirms it)")

// savingFailedError is ErrNotSaved where the receiver said why: it
// failed the group at its end, when it saves the group's files under
// their names (a rename refused, a disk's error). Its words may name
// another file of the group; a second pass (sendConfirming) confirms
// those it did save. (QA: said "the transfer stopped before it said
// the file was saved", of a file the server could not rename.)
type savingFailedError struct{ err error }

func (e *savingFailedError) Error() string {
	return "not saved: the receiver failed while saving the group's files under their names: " + e.err.Error()
}

func (e *savingFailedError) Unwrap() []error { return []error{ErrNotSaved, e.err} }

// ErrNotBegun is why a file of a send that stopped before it began was
// not sent (a FileFailed event each, so that no file goes unnamed).
var ErrNotBegun = errors.New("not sent: the transfer ended first")

// notBegun reports the files of files, directories aside, that a failed
// send never began; those named in begun were reported already.
func (s *Session) notBegun(files iter.Seq[OutgoingFile], begun []sentFile) {
	for f := range files {
		if !f.Dir && !slices.ContainsFunc(begun, func(b sentFile) bool { return b.name == f.Name }) {
			s.event(Event{Kind: FileFailed, Name: f.Name, Err: ErrNotBegun, Sending: true, Path: f.Path})
		}
	}
}

// GroupError reports files of a group that were not transferred while
// the rest were.
type GroupError struct{ Failed []string }

// endedError is err of a transaction that ended as the protocol ends it
// (a group canceled by its receiver, closed by its B exchange): a
// server sends no E for it, which its client would read as the answer
// to its next command (QA am F8).
type endedError struct{ err error }

func (e *endedError) Error() string { return e.err.Error() }
func (e *endedError) Unwrap() error { return e.err }

func (e *GroupError) Error() string {
	return fmt.Sprintf("kermit: %d not transferred: %s", len(e.Failed), NameList(e.Failed))
}

// NameList joins names with commas, the first ten of them and a count of
// the rest: a message a person reads, for any number of files (each has
// an event of its own).
func NameList(names []string) string {
	const shown = 10
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

// skipError marks a per-file failure that does not end the group;
// before says it failed here before anything of it went (it could not
// be opened, or named), not by the receiver's refusal or cancel.
type skipError struct {
	err    error
	before bool
}

func (e *skipError) Error() string { return e.err.Error() }
func (e *skipError) Unwrap() error { return e.err }

// noDirectoryHint is err, a classic receiver's E that refused the last
// file under way at its name, with a hint when that name has a
// directory: G-Kermit makes no directories, and refuses a name in one
// that is not there in words of its own ("Write access denied": QA, a
// send -r to it).
func (s *Session) noDirectoryHint(err error, atEnd bool) error {
	var pe *PeerError
	if atEnd || s.neg.peerKerf || len(s.sending) == 0 || !errors.As(err, &pe) {
		return err
	}
	last := s.sending[len(s.sending)-1]
	dir := path.Dir(last.name)
	if s.openedOf == last.name || dir == "." {
		return err // taken, or in no directory
	}
	return fmt.Errorf("%w (refused at its name %s: a receiver that makes no directories, as G-Kermit makes none, needs %s there first; or send the files by name, without -r, each under its own name)", err, last.name, dir)
}

// untrack takes one file named name off the list of files under way.
func (s *Session) untrack(name string) {
	if i := slices.IndexFunc(s.sending, func(f sentFile) bool { return f.name == name }); i >= 0 {
		s.sending = slices.Delete(s.sending, i, i+1)
	}
}

func (s *Session) event(e Event) {
	switch {
	case e.Kind == FileDone && e.Sending:
		s.stats.FilesSent++
		s.stats.BytesSent += e.Bytes - e.Kept // (kept ranges did not move)
	case e.Kind == FileDone:
		s.stats.FilesReceived++
		s.stats.BytesReceived += e.Bytes - e.Kept
	case e.Kind == FileFailed:
		s.stats.FilesFailed++
	}
	if e.Kind == FileDone && e.Again {
		s.stats.FilesFailed-- // told failed before, whole after all
	}
	if e.Sending {
		// Which files are under way (only the engine's goroutine sends
		// these kinds; FileProgress comes from the data path's too).
		switch e.Kind {
		case FileStart:
			s.sending = append(s.sending, sentFile{name: e.Name, path: e.Path, size: e.Size})
			s.lastZQueued = false
		case FileDone, FileSkipped, FileFailed:
			s.untrack(e.Name)
		}
		if e.Kind == FileDone && s.neg.peerKerf {
			s.unsavedSent = append(s.unsavedSent, sentFile{name: e.Name, path: e.Path, size: e.Size})
		} else if e.Kind == FileDone {
			// A classic receiver says nothing more of a file after its
			// Z's ACK.
			e.Final = true
		}
	}
	if s.cfg.Events != nil {
		s.cfg.Events(e)
	}
}

// verdictSize is the smallest file a dual-channel sender waits for the
// receiver's verdict on (the A's ACK) before its data: 64 MiB, or what
// a round trip (the least measured) carries at 1 GB/s if that is more.
// The wait then costs at most about a round trip for each such file,
// and a refused file sends no data.
func (s *Session) verdictSize() int64 {
	if s.cfg.verdictSize > 0 {
		return s.cfg.verdictSize
	}
	return max(64<<20, int64(s.rtt.least.Seconds()*1e9))
}

// inBandVerdictSize is the smallest file an in-band sender to a kerf
// receiver waits for the verdict on before its data: what a round trip
// carries at 100 MB/s (about what D packets move on a fast path), 1 MiB
// at least, so that a refused file sends about a round trip's data in
// vain at most.
func (s *Session) inBandVerdictSize() int64 {
	return max(1<<20, int64(s.rtt.least.Seconds()*100e6))
}

// verdictNoteAfter is how long a sender waits for the receiver's answer
// on a file before it says so (Config.Log).
var verdictNoteAfter = 10 * time.Second

// verdictChunk is how much of a file goes out on the data path before
// the receiver's answer to its A is awaited, for a file that did not
// wait for it first (under verdictSize): a refused file (its name a
// directory there, a directory not writable) stops after this much
// rather than crossing whole. Sending it takes a round trip or more on
// all but the fastest paths, so the answer is most often in by then;
// if not, the receiver is still busy with the files before this one,
// and the link with their data.
const verdictChunk = 8 << 20

// verdictChunkSize is how much of a file goes before its verdict:
// verdictChunk, and on a path held to a rate (--limit-rate) what the
// rate carries in two round trips, 64 KiB at least: at 1 Mbit/s a
// refused file cost seconds for the block under way (a MiB), and a file
// under 8 MiB crossed whole (QA).
func (s *Session) verdictChunkSize() int64 {
	rl, ok := s.data.(RateLimited)
	if !ok || rl.RateLimit() <= 0 {
		return verdictChunk
	}
	n := int64(float64(rl.RateLimit()) * 2 * max(s.rtt.least, 10*time.Millisecond).Seconds())
	return min(max(n, 64<<10), verdictChunk)
}

// sendUntilVerdict sends bytes [off, off+n) of file id on the data path,
// as SendFile does: while verdict (the A's slot, nil if answered
// already) is unanswered, verdictChunkSize of them at most, and the rest once
// the answer came and accepted the file. It returns the CRC-32C of what
// it sent and how much that was: less than n if the answer set *refused.
func (s *Session) sendUntilVerdict(ctx context.Context, id uint32, src io.ReaderAt, off, n int64, verdict *slot, refused *bool) (uint32, int64, error) {
	if *refused && n > 0 {
		return 0, 0, nil // the answer came already
	}
	var crc uint32
	pos, end := off, off+n
	if chunk := s.verdictChunkSize(); verdict != nil && !verdict.acked && n > chunk {
		// The chunk goes while the answer is awaited, and a refusal
		// stops it after the blocks under way: on a slow link the
		// whole chunk would take long after the answer came (QA:
		// about a minute at 1 Mbit/s). Not more before the answer (QA: a get -r whose
		// client answered a refused file's A only after the file
		// before it had come pushed two chunks, on a slow link more).
		chunkCtx, stop := context.WithCancel(ctx)
		type result struct {
			crc uint32
			err error
		}
		sent := make(chan result, 1)
		go func() {
			c, err := s.data.SendFile(chunkCtx, id, src, pos, chunk)
			sent <- result{c, err}
		}()
		err := s.await(ctx, verdict)
		if err != nil || *refused {
			stop()
		}
		r := <-sent // src is not read once this returns
		stop()
		if err != nil {
			return 0, 0, err
		}
		if *refused {
			return 0, 0, nil // what went is discarded
		}
		if r.err != nil {
			return 0, 0, r.err
		}
		crc, pos = r.crc, pos+chunk
	}
	c, err := s.data.SendFile(ctx, id, src, pos, end-pos)
	if err != nil {
		return 0, pos - off, err
	}
	return framing.CombineCRC32C(crc, c, end-pos), n, nil
}

// stoppedByPeer reports whether a data path's SendFile error says the
// receiver stopped the file (datachan.StoppedError).
func stoppedByPeer(err error) bool {
	var sp interface{ StoppedByPeer() bool }
	return errors.As(err, &sp) && sp.StoppedByPeer()
}

// stoppedFile ends file id, which its receiver stopped on the data
// path, with a Z that discards it, and reports the reason the Z's answer
// gives. The group goes on.
func (s *Session) stoppedFile(ctx context.Context, f OutgoingFile, id uint32, r io.ReadCloser, closeR *bool) error {
	zs, err := s.queue(ctx, 'Z', []byte("D"), 0)
	if err != nil {
		return err
	}
	*closeR = false // the Z's ACK closes it
	s.awaitZ(id, r)
	var why error
	zs.onAck = func(data []byte) error {
		s.data.Release(id)
		s.zAcked(id)
		why = s.notStored(data)
		return nil
	}
	if err := s.await(ctx, zs); err != nil {
		return err
	}
	if why == nil {
		why = fmt.Errorf("%s was stopped by the receiver, which gave no reason; not stored", f.Name)
	}
	s.event(Event{Kind: FileFailed, Name: f.Name, Err: why, Sending: true, Path: f.Path})
	return &skipError{err: why}
}

// eagerResumeSize is the largest file that a resuming sender sends
// whole at once rather than wait a round trip for the receiver's
// recovery point: one it takes less than a round trip to send at 10 MB/s
// (the path's least round trip measured so far), 64 KiB at least and
// 1 MiB at most. Waiting would cost more than what a partial could save.
func (s *Session) eagerResumeSize() int64 {
	n := int64(s.rtt.least.Seconds() * 10e6)
	return min(max(n, 64<<10), 1<<20)
}

// dispositionUnlessThere is kerf's disposition (the '+' attribute) for
// a file sent whole without waiting, with --resume: "store it unless you
// have it whole already" (then refused with N=, as for "R"). Sent only
// to a kerf peer that says it takes it (capas3UnlessThere).
const dispositionUnlessThere = "="

// eagerFlushSize is the file size from which the sender writes out F and
// A before it sends the file's data.
const eagerFlushSize = 1 << 20

func (s *Session) sendFile(ctx context.Context, f OutgoingFile) error {
	start := time.Now()
	r, err := f.Open()
	var gone *LinkTargetGone
	switch {
	case err != nil && errors.As(err, &gone):
		if m, ok := f.Moved.earlier(f.Status, f.Size, f.ModTime, f.ChangeTime); ok {
			// A link whose file was moved (by this transfer, most often)
			// under its own name before the link's turn: its bytes went.
			// The ctime listed tells it from a file given its inode
			// since. Only a link: a file of its own that went is no copy
			// this transfer made (review 52b: another get of the user's
			// passed its moved file over and exited 0 without it).
			err = movedAlready(m)
		} else {
			// The link is there, the file it led to is not (QA ab: said
			// to be the link removed).
			err = fmt.Errorf("%s: the file its symbolic link led to was removed after it was listed (%w)", f.Name, gone.Err)
		}
	case err != nil && errors.Is(err, fs.ErrNotExist) && !f.StatAtOpen && !f.ModTime.IsZero():
		// Listed, and gone by its turn (a file a walk found; rsync's
		// "file has vanished"): said so, not as a bare open error (QA).
		err = fmt.Errorf("%s was removed after it was listed (%w)", f.Name, err)
	}
	if errors.Is(err, ErrPassedOver) {
		s.event(Event{Kind: FileSkipped, Name: f.Name, Err: err, Sending: true})
		if s.neg.passedOver {
			return s.announceUnsent(ctx, f.Name, err) // its words begin with passedOverPrefix
		}
		return nil
	}
	if err != nil {
		s.event(Event{Kind: FileFailed, Name: f.Name, Err: err, Sending: true, Path: f.Path})
		if s.neg.peerKerf {
			if err := s.announceUnsent(ctx, f.Name, err); err != nil {
				return err
			}
		}
		return &skipError{err: err, before: true}
	}
	closeR := true
	defer func() {
		if closeR {
			r.Close()
		}
	}()
	f = asOpened(f, r)
	s.cancelFile.Store(false)
	s.pipelinedFile = false
	// Encoded before it takes a file id: one never sent must not put
	// the ids out of step with the receiver's count (QA: the data of
	// every later file went unclaimed, and the GET stalled).
	name, err := s.encodeField([]byte(f.Name))
	if err != nil {
		s.event(Event{Kind: FileFailed, Name: f.Name, Err: err, Sending: true, Path: f.Path})
		s.noteUnnameable(f.Name)
		return &skipError{err: err, before: true}
	}
	// Counted once it went (review 57: an F that waited for room in
	// the window, and never went for the receiver's E, was counted).
	fs, err := s.queue(ctx, 'F', name, 0)
	if err == nil {
		s.sendFileID++
	}
	id := s.sendFileID
	if err != nil {
		// Taken from the group's list but never begun: no one else
		// reports it. Cut off, so that with several sessions another
		// takes it over.
		s.event(Event{Kind: FileFailed, Name: f.Name, Err: &CutOffError{ErrNotBegun}, Sending: true, Path: f.Path})
		return err
	}
	fs.onAck = func([]byte) error {
		s.openedOf = f.Name // the receiver took it: part may be kept
		return nil
	}
	s.event(Event{Kind: FileStart, Name: f.Name, Size: f.Size, Sending: true, Path: f.Path, ModTime: f.ModTime})

	dual := s.dualActive()
	refused := false // set when a pipelined A is refused
	gaveUp := false  // this side ended the file (Z D) and reported it
	resume := s.cfg.Resume && s.neg.resend && !s.cfg.Text
	// A small file is not worth a round trip: to a kerf receiver it goes
	// whole at once, asking only to be skipped if already there
	// (protocol.md §6).
	// (In band too, to a kerf receiver on a reliable link, which drops
	// the D packets of a file it refused: streamPastAnswers.)
	eager := resume && (dual || s.streamPastAnswers()) && s.neg.unlessThere && f.Size >= 0 && f.Size <= s.eagerResumeSize()
	var verdict *slot // a pipelined A's slot, its answer not read yet
	var reply framing.AttrReply
	reply.Accept = true
	reply.ResumeAt = -1
	var peerCRC uint32
	var havePeerCRC bool
	var kept []framing.KeptRange // ranges the receiver holds past its point (capas4KeptRanges)
	if s.neg.attrs {
		a := s.attrsOf(f)
		a.Length = f.Size
		if f.Size >= 0 {
			a.LengthK = (f.Size + 1023) / 1024
		}
		if s.cfg.Text {
			a.Type = "AMJ"
		} else {
			a.Type = "B8"
		}
		switch {
		case eager:
			a.Disposition = dispositionUnlessThere
		case resume:
			a.Disposition = "R"
		}
		chunks := a.Marshal(s.attrRoom())
		var last *slot
		for _, c := range chunks {
			if last, err = s.queue(ctx, 'A', c, 0); err != nil {
				return err
			}
		}
		// Wait for the verdict unless a refusal only makes the
		// receiver discard: data out of band without recovery, or in
		// band to a kerf receiver on a reliable link, which drops the
		// D packets of a file it refused (QA ap: in band, every file
		// cost two round trips, 3,000 files at 50 ms 85 s). A big file
		// waits all the same, as one round trip is little beside its
		// data, which a refusal (no room, say) would otherwise have
		// cross the link in vain.
		pipelined, big := dual, f.Size >= s.verdictSize()
		if !dual {
			pipelined = s.streamPastAnswers() && (!resume || eager)
			big = f.Size < 0 || f.Size >= s.inBandVerdictSize()
		}
		wait := last != nil && (!pipelined || resume && !eager || big)
		s.pipelinedFile = last != nil && !wait
		if wait {
			if resume {
				s.peerHashes(max(f.Size, 0), last.seq) // the receiver checks its partial
			}
			// A long wait on a reliable link is said, not left silent:
			// the receiver may be checking a big partial, or holding the
			// file until the session an earlier transfer left it with is
			// taken over. (On a serial line retries take the time.)
			stop := func() bool { return false }
			if s.cfg.Reliable {
				stop = time.AfterFunc(verdictNoteAfter, func() {
					s.cfg.Log.Warn("still waiting for the receiver's answer on this file: it may be checking what it has of it, or waiting to take it over from an earlier transfer cut off (a server does after --take-over-after, a minute by default)", "name", f.Name)
				}).Stop
			}
			err := s.await(ctx, last)
			stop()
			if err != nil {
				return err
			}
			reply, peerCRC, havePeerCRC, kept, err = parseAttrReplyExt(last.ackData, s.neg.keptRanges)
			if err != nil {
				return err
			}
			if resume && reply.Accept && reply.ResumeAt < 0 {
				// Asked to recover, the receiver always says from where
				// (0 when it has nothing). No point means its answer was
				// lost and this is its answer to a resent A (C-Kermit
				// ACKs a duplicate A empty): it may be appending at a
				// point this side does not know, so the file is given up
				// rather than sent from the wrong place.
				if _, err := s.queue(ctx, 'Z', []byte("D"), 0); err != nil {
					return err
				}
				err := fmt.Errorf("the receiver's recovery point for %s was lost; resume again", f.Name)
				s.event(Event{Kind: FileFailed, Name: f.Name, Err: err, Sending: true, Path: f.Path})
				return &skipError{err: err}
			}
		} else if last != nil {
			verdict = last
			last.onAck = func(data []byte) error {
				if rp, _, _, _, err := parseAttrReplyExt(data, false); err == nil && !rp.Accept && !gaveUp {
					refused = true
					if eager && strings.HasPrefix(rp.Reasons, reasonAlreadyThere) {
						s.event(Event{Kind: FileSkipped, Name: f.Name, Err: ErrAlreadyThere, Sending: true, Size: f.Size, Path: f.Path, ModTime: f.ModTime, ThereIno: inoOfAlreadyThere(rp.Reasons)})
						return nil
					}
					if err := s.declined(rp.Reasons); err != nil {
						s.event(Event{Kind: FileSkipped, Name: f.Name, Err: err, Sending: true, Size: f.Size, Path: f.Path})
						return nil
					}
					s.groupFailed = append(s.groupFailed, f.Name)
					s.event(Event{Kind: FileSkipped, Name: f.Name, Err: s.refusal(rp.Reasons), Sending: true, Path: f.Path})
				}
				return nil
			}
		}
	}
	if !reply.Accept {
		if _, err := s.queue(ctx, 'Z', []byte("D"), 0); err != nil {
			return err
		}
		if resume && s.neg.skipWhole && strings.HasPrefix(reply.Reasons, reasonAlreadyThere) {
			// Nothing to resume: the receiver has this file whole.
			s.event(Event{Kind: FileSkipped, Name: f.Name, Err: ErrAlreadyThere, Sending: true, Size: f.Size, Path: f.Path, ModTime: f.ModTime, ThereIno: inoOfAlreadyThere(reply.Reasons)})
			return nil
		}
		if err := s.declined(reply.Reasons); err != nil {
			s.event(Event{Kind: FileSkipped, Name: f.Name, Err: err, Sending: true, Size: f.Size, Path: f.Path})
			return nil
		}
		err := s.refusal(reply.Reasons)
		s.event(Event{Kind: FileSkipped, Name: f.Name, Err: err, Sending: true, Path: f.Path})
		return &skipError{err: err}
	}
	var off int64
	var prefixCRC uint32
	if (reply.ResumeAt > 0 || len(kept) > 0) && !resume {
		// A recovery point this send did not ask for (no R in its A):
		// neither sent from 0, which such a receiver may append to
		// what it has, nor taken on the receiver's word (QA: a point
		// past the file's end restarted the file for ever, a file
		// descriptor held each round).
		if _, err := s.queue(ctx, 'Z', []byte("D"), 0); err != nil {
			return err
		}
		err := fmt.Errorf("%w: the receiver asked to go on from byte %d of %s, a recovery this send did not ask for (--resume)", ErrProtocol, reply.ResumeAt, f.Name)
		s.event(Event{Kind: FileFailed, Name: f.Name, Err: err, Sending: true, Path: f.Path})
		return &skipError{err: err}
	}
	// restart has the receiver discard its partial, not of this file, and
	// sends the file afresh.
	restart := func() error {
		s.cfg.Log.Info("partial file differs, sending whole file", "name", f.Name)
		if _, err := s.queue(ctx, 'Z', s.discardZ(errRestart), 0); err != nil {
			return err
		}
		// Once: the restart asks for no recovery, and a point
		// given to it all the same fails the file (above).
		saved := s.cfg.Resume
		s.cfg.Resume = false
		defer func() { s.cfg.Resume = saved }()
		s.untrack(f.Name) // the restart begins it again (FileStart)
		closeR = false
		r.Close()
		return s.sendFile(ctx, f)
	}
	if reply.ResumeAt > 0 {
		off = reply.ResumeAt
		// A partial longer than the file is no prefix of it (the file
		// shrank, or the copy there is another one). A classic
		// receiver has opened it to append at its end whatever comes:
		// sending from 0 stored the old bytes and then the whole file
		// (QA, C-Kermit), so it is discarded, as a partial that
		// differs.
		longer := f.Size >= 0 && off > f.Size
		if longer || havePeerCRC {
			var c uint32
			var err error
			if !longer {
				s.working(func() { c, err = crcOfPrefix(r, off) })
			}
			if longer || err != nil || c != peerCRC {
				// The partial is not a prefix of this file: have the
				// receiver discard it and send the file afresh.
				return restart()
			}
			prefixCRC = c
		}
	}
	var keptBytes int64
	if len(kept) > 0 {
		// Each range the receiver kept past its point must be of this
		// file as it is now, or its partial is another's.
		same := dual && s.neg.keptRanges && keptFit(kept, off, f.Size)
		if same {
			s.working(func() {
				for _, k := range kept {
					c, err := crcOfRange(r, k.Off, k.End)
					if err != nil || c != k.CRC {
						same = false
						return
					}
					keptBytes += k.End - k.Off
				}
			})
		}
		if !same {
			return restart()
		}
	}

	var zdata []byte
	var moved int64
	if dual {
		n := f.Size - off
		src := &sourceAt{r: r}
		if s.cfg.Events != nil {
			var flush func()
			src.report, flush = s.progressKept(f.Name, f.Size, off, true, &src.kept)
			s.setFlush(f.Name, flush)
		}
		if n >= eagerFlushSize {
			// Let the receiver Expect the file before its blocks come,
			// or they would wait in its park. A small file's blocks may
			// go first: parking them is cheap, and its F and A then
			// travel with the packets of the next files.
			if err := s.flush(); err != nil {
				return err
			}
		}
		waited := s.waitingOnPeer()
		var crc uint32
		var sent int64
		if len(kept) > 0 {
			crc, err = s.sendGaps(ctx, id, src, off, f.Size, kept)
			sent = n
		} else {
			crc, sent, err = s.sendUntilVerdict(ctx, id, src, off, n, verdict, &refused)
		}
		waited()
		if err == nil && sent < n {
			// Refused while its data went (a pipelined A): the rest
			// stays here, and a Z discards what went. The refusal
			// was reported as it came.
			if _, err := s.queue(ctx, 'Z', []byte("D"), 0); err != nil {
				return err
			}
			s.data.Release(id)
			return nil
		}
		if err != nil && stoppedByPeer(err) && !s.dataFailed() {
			// The receiver failed the file (its disk filled) and
			// stopped it on the data path: the rest stays here, a Z
			// discards what went, and its answer says why.
			return s.stoppedFile(ctx, f, id, r, &closeR)
		}
		if err != nil && src.failed.Load() && !s.dataFailed() {
			// Reading the file failed, not the data path (the file
			// shrank while it was sent, say): that file is dropped, as a
			// changed one is, and the group goes on.
			why := changedWhileSent(r, f, NotStoredTail)
			if why == nil {
				why = fmt.Errorf("%s could not be read while it was being sent: %w; not stored", f.Name, err)
				// Logged with its cause: a server's operator hears of
				// its own disk failing (raised to warn), not only its
				// client (QA ar: "1 not transferred", at info).
				s.cfg.Log.Info("file not sent: reading it failed", "name", f.Name, "err", err)
			}
			zs, qerr := s.queue(ctx, 'Z', s.discardZ(why), 0)
			if qerr != nil {
				return qerr
			}
			closeR = false // the Z's ACK closes it
			s.awaitZ(id, r)
			zs.onAck = func([]byte) error {
				s.data.Release(id)
				s.zAcked(id)
				return nil
			}
			s.event(Event{Kind: FileFailed, Name: f.Name, Err: why, Sending: true, Path: f.Path})
			return &skipError{err: why}
		}
		if err != nil {
			return s.peerReason(ctx, fmt.Errorf("kermit: sending %s: %w", f.Name, err))
		}
		moved = n
		whole := wholeCRC(prefixCRC, crc, off, n)
		zdata = crcZ(whole)
		changed := changedWhileSent(r, f, NotStoredTail)
		if changed == nil && src.failed.Load() {
			// A block read again for the receiver came short: the file
			// shrank, whatever its size says now.
			changed = fmt.Errorf("%s changed while it was being sent (a part read again came short); %s", f.Name, NotStoredTail)
		}
		if changed != nil && !refused {
			gaveUp = true
			zdata = s.discardZ(changed)
		}
		zs, err := s.queue(ctx, 'Z', zdata, 0)
		if err != nil {
			return err
		}
		s.lastZQueued = !gaveUp
		closeR = false // the Z's ACK closes it
		s.awaitZ(id, r)
		if gaveUp {
			s.event(Event{Kind: FileFailed, Name: f.Name, Err: changed, Sending: true, Path: f.Path})
		}
		size := f.Size
		zs.onAck = func(data []byte) error {
			s.data.Release(id) // no resend reads it after this
			s.zAcked(id)
			if refused || gaveUp {
				return nil
			}
			if why := s.notStored(data); why != nil {
				s.groupFailed = append(s.groupFailed, f.Name)
				s.event(Event{Kind: FileFailed, Name: f.Name, Err: why, Sending: true, Path: f.Path})
				return nil
			}
			s.stats.FileBytes += moved - keptBytes
			s.event(Event{Kind: FileDone, Name: f.Name, Size: size, Bytes: moved, Kept: keptBytes, Offset: off, CRC32C: whole, Duration: time.Since(start), Sending: true, Path: f.Path})
			s.savedSoFar(data)
			return nil
		}
		if gaveUp {
			return &skipError{err: changed}
		}
		return nil
	}

	if off > 0 {
		if _, err := r.(io.Seeker).Seek(off, io.SeekStart); err != nil {
			return fmt.Errorf("kermit: seeking %s for recovery: %w", f.Name, err)
		}
	}
	moved, crc, canceled, err := s.sendData(ctx, r, f, off)
	if err != nil {
		return err
	}
	if refused {
		// Refused while its data went (a pipelined A): the Z discards
		// it; the refusal was reported as it came.
		_, err := s.queue(ctx, 'Z', []byte("D"), 0)
		return err
	}
	var whole uint32 // the file's CRC-32C, when the Z carries it
	changed := changedWhileSent(r, f, s.discardedTail())
	if changed == nil && !canceled && !s.cfg.Text && f.Size >= 0 && !s.cfg.noLengthCheck && off+moved != f.Size {
		// Its size said otherwise, and still does: a file whose size
		// does not tell its length (/proc, /sys, some network file
		// systems). Not this file as announced, so not stored; the
		// group goes on (QA: a kerf receiver's length check ended the
		// whole transfer on /proc/version).
		tail := "not stored"
		if !s.neg.peerKerf {
			tail = "the receiver was told to discard it"
		}
		changed = fmt.Errorf("%s held %d bytes where its size said %d (a file whose size does not tell its length, as in /proc or /sys); %s", f.Name, off+moved, f.Size, tail)
	}
	switch {
	case canceled:
		zdata = []byte("D")
	case changed != nil:
		zdata = s.discardZ(changed)
	case s.neg.fileCRC && (off == 0 || havePeerCRC && !s.cfg.Text):
		// The whole file's check, for the receiver to hold the data
		// to: a packet's block check lets a damaged one through now
		// and then (capas3FileCRC).
		whole = wholeCRC(prefixCRC, crc, off, moved)
		zdata = crcZ(whole)
	}
	zs, err := s.queue(ctx, 'Z', zdata, 0)
	if err != nil {
		return err
	}
	s.lastZQueued = len(zdata) == 0 || zdata[0] != 'D'
	done := Event{Kind: FileDone, Name: f.Name, Size: f.Size, Bytes: moved, Offset: off, Duration: time.Since(start), Sending: true, Path: f.Path}
	if len(zdata) > 0 && zdata[0] == 'C' && !s.cfg.Text {
		done.CRC32C = whole // of the file's bytes (in text, of its canonical form: not said)
	}
	if verdict != nil && !canceled && changed == nil {
		// Its A pipelined: nor is its Z waited for, so the next file's
		// packets follow in the window. Its ACK says how it ended, as
		// out of band (a file the receiver found damaged by its whole
		// CRC fails, not sent again: on a reliable link its packets'
		// checks and TCP's let that through next to never).
		zs.onAck = func(data []byte) error {
			if refused {
				return nil
			}
			if why := s.notStored(data); why != nil {
				s.groupFailed = append(s.groupFailed, f.Name)
				s.event(Event{Kind: FileFailed, Name: f.Name, Err: why, Sending: true, Path: f.Path})
				return nil
			}
			s.stats.FileBytes += moved
			done.Duration = time.Since(start)
			s.event(done)
			s.savedSoFar(data)
			return nil
		}
		return nil
	}
	var why error
	var ack []byte
	zs.onAck = func(data []byte) error {
		why = s.notStored(data)
		ack = data
		return nil
	}
	if err := s.await(ctx, zs); err != nil {
		return err
	}
	if refused {
		// Its A, not waited for, was refused meanwhile: reported then
		// (review 58: twice, and named twice among the failed).
		return nil
	}
	if why != nil && !canceled && changed == nil {
		_, again := r.(io.Seeker) // a file, not a stream read once (standard input)
		if s.crcRefusal(ack) && s.crcResends < maxCRCResends && again {
			// Damaged on the way and not caught by the packets' checks:
			// the receiver has thrown it away; it goes again, whole.
			s.cfg.Log.Warn("sending the file again: its data passed every packet's check and not the whole file's", "name", f.Name, "reason", why)
			s.crcResends++
			defer func() { s.crcResends-- }()
			r.Close()
			closeR = false
			saved := s.cfg.Resume
			s.cfg.Resume = false
			defer func() { s.cfg.Resume = saved }()
			s.untrack(f.Name)
			return s.sendFile(ctx, f)
		}
		s.event(Event{Kind: FileFailed, Name: f.Name, Err: why, Sending: true, Path: f.Path})
		return &skipError{err: why}
	}
	s.stats.FileBytes += moved
	if canceled && why != nil {
		// The receiver canceled it for a failure of its own (its disk
		// full), which its Z's answer says.
		s.event(Event{Kind: FileFailed, Name: f.Name, Err: why, Sending: true, Path: f.Path})
		return &skipError{err: why}
	}
	if canceled {
		// Not transferred: the group reports it (exit 4 at the CLI).
		s.event(Event{Kind: FileSkipped, Name: f.Name, Err: ErrCanceled, Sending: true})
		return &skipError{err: ErrCanceled}
	}
	if changed != nil {
		s.event(Event{Kind: FileFailed, Name: f.Name, Err: changed, Sending: true, Path: f.Path})
		return &skipError{err: changed}
	}
	done.Duration = time.Since(start)
	s.event(done)
	s.savedSoFar(ack)
	return nil
}

// crcRefusal reports whether a Z's ACK refuses the file for its
// whole-file CRC (capas3FileCRC): an N whose reason begins
// reasonFileCRC, the receiver's word that it threw the file away.
func (s *Session) crcRefusal(ack []byte) bool {
	if !s.neg.fileCRC || len(ack) == 0 || ack[0] != 'N' {
		return false
	}
	text, err := s.decodeString(ack[1:])
	return err == nil && strings.HasPrefix(text, reasonFileCRC)
}

// wholeCRC is the CRC-32C of a whole file: crc of its n bytes from off
// on, after a first part (a kept partial) whose CRC is prefix.
func wholeCRC(prefix, crc uint32, off, n int64) uint32 {
	if off == 0 {
		return crc
	}
	return framing.CombineCRC32C(prefix, crc, n)
}

// crcZ is the data of a Z that carries the whole file's CRC-32C.
func crcZ(whole uint32) []byte { return []byte("C" + strconv.FormatUint(uint64(whole), 16)) }

// maxCRCResends: a file that fails its whole-file CRC at the receiver
// (capas3FileCRC) is sent again at most this many times. A damaged
// packet passes a 16-bit block check about one time in 65,536: twice in
// one file means a line too noisy to trust, or a fault that is not the
// line's, and the file is reported failed.
const maxCRCResends = 2

// savedSoFar reads a stored file's Z ACK: savedAck from a kerf receiver
// on a reliable link (whose ACKs come in order) says every file it
// acknowledged so far is saved under its name, so they are reported
// saved now rather than at the group's end, and not kept till then.
func (s *Session) savedSoFar(ack []byte) {
	if s.neg.peerKerf && s.cfg.Reliable && string(ack) == string(savedAck) {
		s.reportSaved()
	}
}

// reportSaved reports the files the receiver verified as saved.
func (s *Session) reportSaved() {
	for _, f := range s.unsavedSent {
		s.event(Event{Kind: FileSaved, Name: f.name, Size: f.size, Bytes: f.size, Sending: true, Path: f.path})
	}
	s.unsavedSent = s.unsavedSent[:0]
}

// notStored reads the ACK of a file's Z: with capas2NotStored, "N" and
// a reason say the receiver could not store the file (its disk filled,
// say) and goes on; nil means stored.
func (s *Session) notStored(ack []byte) error {
	if !s.neg.notStored {
		return nil
	}
	return s.zRefusal(ack, "stored")
}

// zRefusal reads a Z's ACK that says the receiver did not keep what the
// Z ended ("N" and the reason, see refusalAck): an error saying it was
// not <done> by the receiver, or nil for any other ACK.
func (s *Session) zRefusal(ack []byte, done string) error {
	if len(ack) == 0 || ack[0] != 'N' {
		return nil
	}
	if text, err := s.decodeString(ack[1:]); err == nil && text != "" {
		return receiverSaid{fmt.Errorf("not %s by the receiver: %s", done, text)}
	}
	return receiverSaid{fmt.Errorf("not %s by the receiver", done)}
}

// errRestart is the reason a kerf sender gives with the Z that discards
// a partial it will not continue (it is not a prefix of the file): the
// file comes again at once, whole, so a kerf receiver reports nothing
// for the discarded attempt.
var errRestart = errors.New("partial differs: sent whole")

// discardZ is the data of a Z that discards its file: "D", and for a kerf
// peer why, in words (a classic Kermit takes "D" alone).
func (s *Session) discardZ(why error) []byte {
	if !s.neg.peerKerf {
		return []byte("D")
	}
	return append([]byte{'D'}, s.fitText(why.Error(), s.neg.maxData-1)...)
}

// attrsOf is what an A says of f, file or directory, besides its length
// and type: its time, its permissions, the system.
func (s *Session) attrsOf(f OutgoingFile) framing.Attributes {
	a := framing.NewAttributes()
	if s.neg.peerKerf {
		a.Zone = time.UTC // see framing: dates survive across zones
		a.SubSecond = s.neg.subSecond
	}
	if !f.ModTime.IsZero() {
		a.ModTime = f.ModTime
		loc := time.Local
		if a.Zone != nil {
			loc = a.Zone
		}
		if y := f.ModTime.In(loc).Year(); (y < 0 || y > 9999) && !f.Dir {
			// Kermit's date has four digits of year: said, since the
			// copy gets the time it arrives (QA: silent).
			s.cfg.Log.Warn("a modification time outside years 0-9999 cannot be sent: the copy gets the time it arrives", "name", f.Name, "time", f.ModTime.Format(time.RFC3339))
		}
	}
	if f.Mode != 0 || f.ModeKnown {
		a.Perm = int(f.Mode.Perm())
		if f.Dir && f.Mode&fs.ModeSticky != 0 {
			a.Perm |= stickyBit // /tmp-like directories stay so, as with rsync -a
		}
	}
	a.SysID = "U1"
	return a
}

// What a file found changed after it was sent comes to (changedWhileSent):
// a kerf receiver discards it for certain; a classic Kermit is told to,
// but C-Kermit keeps an incomplete file unless told otherwise (SET FILE
// INCOMPLETE DISCARD), so what came of it may stand under its name (QA).
const (
	// NotStoredTail ends a kerf sender's reason (Z "D"): a receiver
	// that wrote the file somewhere else than a store may say it so.
	NotStoredTail        = "not stored: transfer it again for the new version"
	classicDiscardedTail = "the receiver was told to discard it (a Kermit that keeps incomplete files, as C-Kermit does by default, keeps what came of it under its name): transfer it again for the new version"
)

// discardedTail is what a file this side discarded after sending comes
// to at this session's receiver.
func (s *Session) discardedTail() string {
	if s.neg.peerKerf {
		return NotStoredTail
	}
	return classicDiscardedTail
}

// changedWhileSent says how the file f, open as r and read to the end,
// differs from what was announced for it (its size and modification
// time), or nil. A file written to while it is sent arrives as a mix of
// old and new bytes whose checks all pass, so it is discarded, not
// stored (tar warns "file changed as we read it"; kerf does not keep
// such a copy). tail ends the words: what came of the file there.
func changedWhileSent(r FileReader, f OutgoingFile, tail string) error {
	st, ok := r.(interface{ Stat() (fs.FileInfo, error) })
	if !ok || f.ModTime.IsZero() || f.Size < 0 {
		return nil
	}
	fi, err := st.Stat()
	if err != nil {
		return nil
	}
	if fi.Size() == f.Size && fi.ModTime().Equal(f.ModTime) {
		if ct := ChangeTimeOf(fi); f.ChangeTime.IsZero() || ct.IsZero() || ct.Equal(f.ChangeTime) {
			return nil
		}
		if m, ok := f.Moved.earlier(StatusOf(fi), fi.Size(), fi.ModTime(), f.ChangeTime); ok && removedWhileOpen(fi) && !ChangeTimeOf(fi).After(m.removed) {
			// Removed by this side's --remove-source-files, unchanged,
			// once sent under another name (a link to it): opened with
			// the ctime it had then (not a file given its inode since),
			// the bytes read are the ones it had, and no write came
			// after the removal.
			return nil
		}
		if removedWhileOpen(fi) {
			// Removing a file moves its ctime too: said as it is, and
			// not stored all the same, since it may have been written
			// before it went.
			// (A file renamed over it, as a republished file is,
			// removes it just the same: the name now has a newer one.)
			return fmt.Errorf("%s was removed, or replaced by another file of its name, while it was being sent; %s", f.Name, tail)
		}
		if movedOffItsName(r, fi) {
			// A rename moves the ctime as a write does: said as it is
			// (QA: said to be written to with its time put back).
			return fmt.Errorf("%s was renamed, or another file put at its name, while it was being sent; %s", f.Name, tail)
		}
		if onlyLinksChanged(f.Status, StatusOf(fi)) {
			// Links made or removed: that explains the ctime, and a
			// backup would otherwise fail on every file linked
			// meanwhile.
			return nil
		}
		// Written, and given back its size and time (touch -r, cp -p);
		// or its mode, owner or extended attributes changed, which move
		// the ctime too and cannot be told apart from a write.
		return fmt.Errorf("%s changed while it was being sent (its change time moved, its size and modification time the same: written to and its time put back, or its mode, owner or extended attributes changed); %s", f.Name, tail)
	}
	return fmt.Errorf("%s changed while it was being sent (now %d bytes, modified %s); %s",
		f.Name, fi.Size(), fi.ModTime().Format(time.RFC3339Nano), tail)
}

// movedOffItsName reports whether the file r (of status fi) is no
// longer at the path it was opened by: that path names another file,
// or nothing. False where that cannot be told.
func movedOffItsName(r FileReader, fi fs.FileInfo) bool {
	f := osFile(r)
	was := StatusOf(fi)
	if f == nil || !was.Known {
		return false
	}
	cur, err := os.Stat(f.Name())
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	now := StatusOf(cur)
	return now.Known && (now.Dev != was.Dev || now.Ino != was.Ino)
}

// asOpened is f with the size, times and status of the file as opened,
// not as listed: a file replaced between its
// listing and its turn (a new version renamed over it, as files are
// published; a big tree takes long) or changed in place meanwhile (a log
// appended to) is sent as it is then, as rsync does (QA: get -r during
// sends of the same tree failed hundreds of files; a send -r of a live
// tree failed every log written to after the walk, as "changed while it
// was being sent"). What changes after the open still fails the file
// (changedWhileSent compares with this).
func asOpened(f OutgoingFile, r FileReader) OutgoingFile {
	if !f.StatAtOpen && (f.Size < 0 || f.ModTime.IsZero() || !f.Status.Known) {
		return f
	}
	var fi fs.FileInfo
	if o, ok := r.(interface{ OpenedStat() fs.FileInfo }); ok {
		fi = o.OpenedStat() // what the open saw: no second fstat
	} else if st, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		var err error
		if fi, err = st.Stat(); err != nil {
			return f
		}
	} else {
		return f
	}
	if !fi.Mode().IsRegular() {
		return f
	}
	now := StatusOf(fi)
	if !now.Known {
		return f
	}
	f.Size, f.ModTime = fi.Size(), fi.ModTime()
	f.ChangeTime, f.Status = ChangeTimeOf(fi), now
	if f.ModeKnown || f.Mode != 0 {
		f.Mode = fi.Mode().Perm()
	}
	return f
}

// awaitZ keeps file id's reader open until its Z is acknowledged
// (zAcked): a block the receiver reports damaged is read again until
// then.
func (s *Session) awaitZ(id uint32, r io.Closer) {
	if s.awaitingZ == nil {
		s.awaitingZ = make(map[uint32]io.Closer)
	}
	s.awaitingZ[id] = r
}

// zAcked closes file id's reader: its Z was acknowledged.
func (s *Session) zAcked(id uint32) {
	if r, ok := s.awaitingZ[id]; ok {
		delete(s.awaitingZ, id)
		r.Close()
	}
}

// closeAwaitingZ closes the readers of files whose Z was never
// acknowledged, at a group's end: a group cut off (its client killed)
// left them open until the garbage collector found them (QA: a server's
// descriptors stayed up for minutes).
func (s *Session) closeAwaitingZ() {
	for id, r := range s.awaitingZ {
		delete(s.awaitingZ, id)
		if s.data != nil {
			s.data.Release(id)
		}
		r.Close()
	}
}

// sendData sends the file's bytes as D packets.
func (s *Session) sendData(ctx context.Context, r io.Reader, f OutgoingFile, off int64) (moved int64, crc uint32, canceled bool, err error) {
	src := newDataSource(r, s.cfg.Text)
	for {
		if s.cancelFile.Load() || s.cancelGroup.Load() {
			return moved, crc, true, nil
		}
		if err := src.fill(); err != nil {
			return moved, crc, false, fmt.Errorf("kermit: reading %s: %w", f.Name, err)
		}
		if src.empty() {
			return moved, crc, false, nil
		}
		if !s.neg.streaming {
			// Sized once the window has room, from what the line has
			// shown by then: sized before the wait, a packet took its
			// length from a loss rate the answers it waited through had
			// already changed (a 1 KB packet on a line that let one in
			// eight through, sized before the burst of NAKs behind it:
			// 20 tries, then "too many retries").
			if err := s.awaitRoom(ctx); err != nil {
				return moved, crc, false, err
			}
		}
		max := s.dataLen()
		data, n := s.neg.out.Encode(make([]byte, 0, max), src.pending(), max)
		if s.neg.fileCRC {
			crc = framing.UpdateCRC32C(crc, src.pending()[:n])
		}
		moved += int64(src.consume(n))
		if s.neg.streaming {
			err = s.stream(ctx, data, n)
		} else {
			_, err = s.queue(ctx, 'D', data, n)
		}
		if err != nil {
			return moved, crc, false, err
		}
		if s.cfg.Events != nil {
			s.event(Event{Kind: FileProgress, Name: f.Name, Size: f.Size, Bytes: moved, Offset: off, Sending: true})
		}
	}
}

// dataSource buffers file bytes for the encoder, converting LF to CRLF
// in text mode (Kermit's canonical text form).
type dataSource struct {
	r     io.Reader
	text  bool
	buf   []byte
	raw   []byte
	start int
	eof   bool
}

func newDataSource(r io.Reader, text bool) *dataSource {
	d := &dataSource{r: r, text: text, buf: make([]byte, 0, 128*1024)}
	if text {
		d.raw = make([]byte, 32*1024)
	}
	return d
}

func (d *dataSource) pending() []byte { return d.buf[d.start:] }
func (d *dataSource) empty() bool     { return d.eof && d.start >= len(d.buf) }

// consume takes n pending bytes as sent and returns how many of the
// file's bytes they hold: in text mode, less the CRs fill put before
// each LF (a 23-byte file was reported as 26 bytes moved, more than its
// size; QA s). Every LF has one, so a CR of the file's own before an LF
// is followed by that CR, and only the added ones by the LF.
func (d *dataSource) consume(n int) int {
	sent := d.buf[d.start : d.start+n]
	d.start += n
	if !d.text {
		return n
	}
	file := n
	for i, c := range sent {
		if c == '\r' && d.start-n+i+1 < len(d.buf) && d.buf[d.start-n+i+1] == '\n' {
			file--
		}
	}
	return file
}

func (d *dataSource) fill() error {
	if d.eof || len(d.buf)-d.start >= 32*1024 {
		return nil
	}
	copy(d.buf, d.buf[d.start:])
	d.buf = d.buf[:len(d.buf)-d.start]
	d.start = 0
	for !d.eof && len(d.buf) < 64*1024 {
		var n int
		var err error
		if d.text {
			n, err = d.r.Read(d.raw)
			for _, c := range d.raw[:n] {
				if c == '\n' {
					d.buf = append(d.buf, '\r')
				}
				d.buf = append(d.buf, c)
			}
		} else {
			n, err = d.r.Read(d.buf[len(d.buf):cap(d.buf)])
			d.buf = d.buf[:len(d.buf)+n]
		}
		if err == io.EOF {
			d.eof = true
		} else if err != nil {
			return err
		}
	}
	return nil
}

// crcOfPrefix computes the CRC-32C of the first n bytes of r.
func crcOfPrefix(r io.ReaderAt, n int64) (uint32, error) { return crcOfRange(r, 0, n) }

// crcOfRange is the CRC-32C of bytes [off, end) of r (by r itself when
// it can do better: filestore.LocalFile skips a sparse file's holes).
func crcOfRange(r io.ReaderAt, off, end int64) (uint32, error) {
	if c, ok := r.(interface {
		CRC32C(off, end int64) (uint32, error)
	}); ok {
		return c.CRC32C(off, end)
	}
	fd := -1 // not a file: holes.CRC32C reads it all
	if f := osFile(r); f != nil {
		// A file a server sends: its holes need no reading either (QA
		// aa: a 20 GiB image's resume read its holes, seconds).
		fd = int(f.Fd())
	}
	return holes.CRC32C(fd, r, off, end)
}

// keptFit reports whether kept ranges a receiver listed are sorted,
// apart, past its recovery point off and within the file's size.
func keptFit(kept []framing.KeptRange, off, size int64) bool {
	last := off
	for _, k := range kept {
		if k.Off <= last || k.End <= k.Off || k.End > size {
			return false
		}
		last = k.End
	}
	return size >= 0
}

// sendGaps sends bytes [off, end) of file id but the ranges the
// receiver kept (capas4KeptRanges), and returns the CRC-32C of all of
// [off, end): the gaps' combined with the kept ranges', which the
// sender read and found the same.
func (s *Session) sendGaps(ctx context.Context, id uint32, src *sourceAt, off, end int64, kept []framing.KeptRange) (uint32, error) {
	var crc uint32
	pos := off
	gap := func(to int64) error {
		if to <= pos {
			return nil
		}
		c, err := s.data.SendFile(ctx, id, src, pos, to-pos)
		if err != nil {
			return err
		}
		crc = framing.CombineCRC32C(crc, c, to-pos)
		pos = to
		return nil
	}
	for _, k := range kept {
		if err := gap(k.Off); err != nil {
			return 0, err
		}
		crc = framing.CombineCRC32C(crc, k.CRC, k.End-k.Off)
		src.kept.Add(k.End - k.Off)
		if src.report != nil {
			src.report(k.End - k.Off) // there already: counted as passed
		}
		pos = k.End
	}
	if err := gap(end); err != nil {
		return 0, err
	}
	return crc, nil
}

// sendDir sends a directory to a kerf peer: an F packet whose name ends
// in "/", then (to a peer that keeps directories' attributes) an A with
// its permissions and modification time, and at once an empty Z, with no
// data. A classic Kermit has no way to make a directory, and is sent none.
func (s *Session) sendDir(ctx context.Context, f OutgoingFile) error {
	if !s.neg.peerKerf {
		if !f.Filled {
			// Said, not lost without a word (QA s).
			s.cfg.Log.Warn("an empty directory is not made: a classic Kermit makes no directories", "dir", f.Name)
		}
		return nil
	}
	name := f.Name
	var attrs [][]byte
	if s.neg.dirAttrs && s.neg.attrs {
		attrs = s.attrsOf(f).Marshal(s.attrRoom())
	}
	zs, err := s.sendHeaderOnly(ctx, strings.TrimSuffix(name, "/")+"/", attrs, nil)
	var skip *skipError
	if errors.As(err, &skip) {
		s.groupFailed = append(s.groupFailed, name)
		s.event(Event{Kind: FileFailed, Name: name, Err: skip.err, Sending: true, Path: f.Path})
		return nil
	}
	if zs != nil {
		// A receiver that could not make the directory ACKs the Z with
		// "N" and the reason.
		zs.onAck = func(data []byte) error {
			why := s.zRefusal(data, "made")
			if why == nil {
				return nil
			}
			s.groupFailed = append(s.groupFailed, name)
			s.event(Event{Kind: FileFailed, Name: name, Err: why, Sending: true})
			return nil
		}
	}
	return err
}

// announceUnsent tells a kerf peer about a file that cannot be sent (it
// cannot be opened, say): an F packet and at once a Z that discards it,
// its data "D" followed by the reason, so the receiving side reports the
// file as not received instead of never hearing of it. (A classic Kermit
// skips such a file silently, as C-Kermit does.)
func (s *Session) announceUnsent(ctx context.Context, name string, why error) error {
	_, err := s.sendHeaderOnly(ctx, name, nil, s.discardZ(why))
	var skip *skipError
	if errors.As(err, &skip) {
		return nil // the caller has reported the file already
	}
	return err
}

// sendHeaderOnly sends an F for name, the A packets attrs (if any) and at
// once a Z carrying zdata, with no data, and returns the Z's slot. The F takes a file id, as
// every F does, so ids stay in step with the receiver's count. A name
// that does not fit a packet was never sendable and is left out (a
// skipError, for the caller to report).
func (s *Session) sendHeaderOnly(ctx context.Context, name string, attrs [][]byte, zdata []byte) (*slot, error) {
	enc, err := s.encodeField([]byte(name))
	if err != nil {
		s.noteUnnameable(name)
		return nil, &skipError{err: err}
	}
	if _, err := s.queue(ctx, 'F', enc, 0); err != nil {
		return nil, err
	}
	s.sendFileID++ // (once it went)
	for _, a := range attrs {
		if _, err := s.queue(ctx, 'A', a, 0); err != nil {
			return nil, err
		}
	}
	return s.queue(ctx, 'Z', zdata, 0)
}

// fitText encodes as much of msg as fits limit encoded bytes, in whole
// runes, for the reasons kerf adds to packets.
func (s *Session) fitText(msg string, limit int) []byte {
	enc, _ := s.fitPrefix(s.concealed([]byte(msg)), limit)
	return enc
}

// fitPrefix encodes the longest prefix of b, cut at a character's start,
// that fits limit encoded bytes, and says how many bytes of b it took.
func (s *Session) fitPrefix(b []byte, limit int) (enc []byte, n int) {
	enc, n = s.neg.out.Encode(nil, b, limit)
	if n < len(b) && !utf8.RuneStart(b[n]) {
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		enc, _ = s.neg.out.Encode(enc[:0], b[:n], limit)
	}
	return enc, n
}

// ErrPassedOver marks an entry a sender's walk met that is no file to
// copy (a FIFO, a socket, a device, a link to a directory), as rsync -r
// and cp -r pass them over: OutgoingFile.Open returns it, wrapped with
// what the entry is, and the file is reported skipped, not failed. A
// kerf receiver that sets capas3PassedOver hears of it too
// (passedOverPrefix), so that a GET does not leave such entries out
// without a word.
var ErrPassedOver = errors.New("passed over")

// PassedOver is the error of an entry passed over, saying what it is
// ("a FIFO"): errors.Is(err, ErrPassedOver).
func PassedOver(what string) error { return fmt.Errorf("%w: %s", ErrPassedOver, what) }

// passedOverPrefix begins the reason of a discarding Z (D and its
// words) for an entry passed over: a kerf receiver reports the entry as
// skipped, not failed; one from before reads a failure with those words.
const passedOverPrefix = "passed over: "

// LinkTargetGone is what an OutgoingFile's Open returns for a symbolic
// link, listed as the file it led to, whose file is gone: the link is
// still there.
type LinkTargetGone struct{ Err error }

func (e *LinkTargetGone) Error() string {
	return "the file its symbolic link leads to is gone: " + e.Err.Error()
}

func (e *LinkTargetGone) Unwrap() error { return e.Err }

// LinkTargetGoneAt returns err, an open's, as a LinkTargetGone if it
// says nothing is there and what was opened is a symbolic link (lstat
// looks at it), and err itself otherwise.
func LinkTargetGoneAt(err error, lstat func() (fs.FileInfo, error)) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if li, lerr := lstat(); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
		return &LinkTargetGone{Err: err}
	}
	return err
}

// ErrDeclined is why a file a classic Kermit receiver refused for its
// name or date was not sent: its file collision setting (C-Kermit's SET
// FILE COLLISION UPDATE or DISCARD) keeps the copy it has. Like
// C-Kermit's own sender, kerf counts that as done on purpose, not as a
// failure.
var ErrDeclined = errors.New("declined by the receiver, which keeps its own copy")

// declined returns the error of a refusal that is a classic receiver's
// deliberate skip (first tag "?" name or "#" date, which C-Kermit counts
// as success: protocol.md §5.2), or nil for any other refusal. kerf
// never refuses so, and from a kerf peer the tags mean a failure.
func (s *Session) declined(reasons string) error {
	if s.neg.peerKerf || reasons == "" || (reasons[0] != '?' && reasons[0] != '#') {
		return nil
	}
	return fmt.Errorf("%w (%s)", ErrDeclined, reasonWords(reasons[:1]))
}

// refusal describes a refusing A ACK's reasons: the tags, and for a kerf
// peer the text of its "m" field (see refusalText).
func (s *Session) refusal(reasons string) error {
	if j := strings.IndexByte(reasons, 'm'); j >= 1 && s.neg.peerKerf {
		if text, ok := s.refusalFields(reasons[j:]); ok {
			// Its words say why; the tags' names ("disposition") would
			// only say which attribute.
			return receiverSaid{fmt.Errorf("refused by the receiver: %s", text)}
		}
	}
	return receiverSaid{fmt.Errorf("refused by the receiver (%s)", reasonWords(reasons))}
}

// receiverSaid marks an error as the receiver's answer about a file (a
// refusal at its A, "not stored" at its Z), as against this side's own
// trouble with it (FromReceiver).
type receiverSaid struct{ error }

func (e receiverSaid) Unwrap() error { return e.error }

// sendInitError marks the failure of a group's Send-Init: no file of it
// was offered (AtSendInit).
type sendInitError struct{ error }

func (e sendInitError) Unwrap() error { return e.error }

// AtSendInit reports whether err ended a send at its Send-Init, before
// any file was offered (a server that refuses to receive at all: C-Kermit's
// DISABLE SEND).
func AtSendInit(err error) bool {
	var si sendInitError
	return errors.As(err, &si)
}

// FromReceiver reports whether err is the receiver's doing: its refusal
// of a file, or its E. (The CLI then says what it sent the file as.)
func FromReceiver(err error) bool {
	var rs receiverSaid
	var pe *PeerError
	return errors.As(err, &rs) || errors.As(err, &pe)
}

// refusalFields decodes the "m" fields that end a refusal (see
// refusalText), one after another to the end, into their text.
func (s *Session) refusalFields(f string) (string, bool) {
	var text strings.Builder
	for len(f) > 0 {
		if len(f) < 2 || f[0] != 'm' {
			return "", false
		}
		l := int(f[1]) - 32
		if l < 0 || 2+l > len(f) {
			return "", false
		}
		part, err := s.decodeString([]byte(f[2 : 2+l]))
		if err != nil {
			return "", false
		}
		text.WriteString(part)
		f = f[2+l:]
	}
	return text.String(), text.Len() > 0
}

// reasonWord is the attribute a refusal's reason letter stands for.
var reasonWord = map[rune]string{'!': "size", '1': "size", '"': "type", '#': "date", '+': "disposition",
	',': "protection", '-': "protection", '.': "origin", '*': "character set", '?': "name", '=': "already there"}

// reasonWords names the attributes a refusal's reason letters stand for
// (Kermit Protocol Manual, attribute tags); an unknown one is shown as it
// is, and none as "no reason given".
func reasonWords(reasons string) string {
	var words []string
	for _, r := range reasons {
		w, ok := reasonWord[r]
		if !ok {
			w = strconv.QuoteRune(r)
		}
		if !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return "no reason given"
	}
	return strings.Join(words, ", ")
}

// parseAttrReplyExt parses the ACK to an A packet, including kerf's
// optional "c" field with the CRC-32C of the receiver's partial file.
func parseAttrReplyExt(data []byte, keptRanges bool) (framing.AttrReply, uint32, bool, []framing.KeptRange, error) {
	var crc uint32
	have := false
	var kept []framing.KeptRange
	// Kept ranges only when agreed (capas4KeptRanges), and only in an
	// acceptance with a recovery point: a refusal's words are not fields.
	for keptRanges && len(data) > 0 && data[0] == framing.AttrLength {
		i := indexField(data, framing.AttrKept)
		if i < 0 {
			break
		}
		l := int(data[i+1]) - 32
		if i+2+l > len(data) {
			return framing.AttrReply{}, 0, false, nil, fmt.Errorf("%w: attribute reply: kept range cut short", ErrProtocol)
		}
		k, err := framing.ParseKeptRange(data[i+2 : i+2+l])
		if err != nil {
			return framing.AttrReply{}, 0, false, nil, fmt.Errorf("%w: attribute reply: %v", ErrProtocol, err)
		}
		kept = append(kept, k)
		data = append(append([]byte(nil), data[:i]...), data[i+2+l:]...)
	}
	if i := indexField(data, 'c'); i >= 0 {
		l := int(data[i+1]) - 32
		if l > 0 && i+2+l <= len(data) {
			if v, err := strconv.ParseUint(string(data[i+2:i+2+l]), 16, 32); err == nil {
				crc, have = uint32(v), true
			}
			data = append(append([]byte(nil), data[:i]...), data[i+2+l:]...)
		}
	}
	r, err := framing.ParseAttrReply(data)
	if err != nil {
		return r, 0, false, nil, fmt.Errorf("%w: attribute reply: %v", ErrProtocol, err)
	}
	return r, crc, have, kept, nil
}

// indexField finds a tag-length-value field with the given tag in an
// attribute reply of the form "1<len><digits>c<len><hex>".
func indexField(data []byte, tag byte) int {
	for i := 0; i+1 < len(data); {
		if data[i] == 'Y' || data[i] == 'N' {
			i++
			continue
		}
		l := int(data[i+1]) - 32
		if l < 0 {
			return -1
		}
		if data[i] == tag {
			return i
		}
		i += 2 + l
	}
	return -1
}

// progress returns report, which counts and reports FileProgress for a
// file whose bytes move outside the engine's goroutine (the data
// channel): it is safe for concurrent use and reports at most every
// 256 KiB. flush reports the count if report has not: a file cut off
// calls it before its FileFailed, since what a take-over counts of the
// bytes the lost session moved is what was last reported (a count up
// to 256 KiB short left a command's total short: CI, e2e
// TestSessionLostIsTakenOver).
func (s *Session) progress(name string, size, off int64, sending bool) (report func(n int64), flush func()) {
	return s.progressKept(name, size, off, sending, nil)
}

// progressKept is progress whose events say in Kept what of their
// Bytes is ranges the receiver kept (kept, counted by the caller).
func (s *Session) progressKept(name string, size, off int64, sending bool, kept *atomic.Int64) (report func(n int64), flush func()) {
	var done, last atomic.Int64
	var mu sync.Mutex // reports one at a time, never going back
	events := s.cfg.Events
	tell := func(least int64) {
		// Several connections' writers count at once (each reads the
		// block it sends): only the largest count so far is reported.
		mu.Lock()
		defer mu.Unlock()
		if d := done.Load(); d-last.Load() >= least && d > last.Load() {
			last.Store(d)
			e := Event{Kind: FileProgress, Name: name, Size: size, Bytes: d, Offset: off, Sending: sending}
			if kept != nil {
				e.Kept = kept.Load()
			}
			events(e)
		}
	}
	report = func(n int64) {
		if done.Add(n)-last.Load() >= 256<<10 {
			tell(256 << 10)
		}
	}
	return report, func() { tell(1) }
}

// dataFailed reports whether the data path has failed (as far as it
// says: DataFailure).
func (s *Session) dataFailed() bool {
	df, ok := s.data.(DataFailure)
	if !ok {
		return false
	}
	select {
	case <-df.Failed():
		return true
	default:
		return false
	}
}

// sourceAt is what the data channel reads a file through: it counts
// progress (report, if set) and notes a read that came short or failed,
// which fails the file rather than the data path.
type sourceAt struct {
	r      io.ReaderAt
	report func(int64)
	failed atomic.Bool
	kept   atomic.Int64 // ranges the receiver kept, passed over (sendGaps)
}

func (p *sourceAt) ReadAt(b []byte, off int64) (int, error) {
	n, err := p.r.ReadAt(b, off)
	if p.report != nil {
		p.report(int64(n))
	}
	if n < len(b) {
		p.failed.Store(true)
	}
	return n, err
}

// MayHaveHoles passes on what the open file knows of its holes
// (datachan.HoleHinter).
func (p *sourceAt) MayHaveHoles() (holes, known bool) {
	if h, ok := p.r.(interface{ MayHaveHoles() (bool, bool) }); ok {
		return h.MayHaveHoles()
	}
	return false, false
}

// Unread counts bytes the data channel sent without reading them (a
// sparse file's holes, as blocks of zeros: datachan.UnreadCounter).
func (p *sourceAt) Unread(n int64) {
	if p.report != nil {
		p.report(n)
	}
}

// File lets the data channel send the file's blocks with sendfile
// (datachan.FileSource); it still reads them through ReadAt, which
// counts them.
func (p *sourceAt) File() *os.File { return osFile(p.r) }

// osFile is the open file under r, nil if it has none.
func osFile(r any) *os.File {
	switch r := r.(type) {
	case *os.File:
		return r
	case interface{ File() *os.File }: // filestore.LocalFile
		return r.File()
	}
	return nil
}

// progressWriterAt counts what the data channel writes into a file.
type progressWriterAt struct {
	w      io.WriterAt
	report func(int64)
}

func (p *progressWriterAt) WriteAt(b []byte, off int64) (int, error) {
	n, err := p.w.WriteAt(b, off)
	p.report(int64(n))
	return n, err
}

// SkipZerosAt passes a block of zeros on to a destination that may take
// it as a hole (datachan.ZeroSkipper).
func (p *progressWriterAt) SkipZerosAt(off, n int64) (bool, error) {
	z, ok := p.w.(interface {
		SkipZerosAt(off, n int64) (bool, error)
	})
	if !ok {
		return false, nil
	}
	done, err := z.SkipZerosAt(off, n)
	if done && err == nil {
		p.report(n)
	}
	return done, err
}

// unsentTag begins the text a kerf sender puts in its B packet for a
// kerf receiver: the files of the group it could not even name, their
// paths being longer than a packet holds, one a line, shortened. The
// receiver reports each as failed (ErrNameTooLong); a receiver that
// knows nothing of it ignores the B's data (protocol.md §7).
const unsentTag = "kerf-unsent"

// ErrNameTooLong is a file the sender could not send: its name does not
// fit one Kermit packet of the session (about 9,000 bytes at most with
// long packets, 90 without; the sender says its limit).
var ErrNameTooLong = errors.New("its path is longer than one Kermit packet of this session holds: the sender could not name it, not sent")

// noteUnnameable remembers name, which does not fit a packet, for the
// group's B (to a kerf peer, which otherwise never hears of it).
func (s *Session) noteUnnameable(name string) {
	if s.neg.peerKerf {
		s.unnameable = append(s.unnameable, name)
	}
}

// unnameableReport is the B packet's data field: nil, or unsentTag and
// the shortened names of the files noteUnnameable kept, as many as fit.
func (s *Session) unnameableReport() []byte {
	if len(s.unnameable) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(unsentTag)
	for i, n := range s.unnameable {
		line := "\n" + shortName(n)
		if b.Len()+len(line) > 4000 {
			fmt.Fprintf(&b, "\n(and %d more)", len(s.unnameable)-i)
			break
		}
		b.WriteString(line)
	}
	s.unnameable = nil
	return s.fitText(b.String(), s.fieldLimit())
}

// shortName is name cut in its middle to at most about 200 bytes, at
// character boundaries, for a report.
func shortName(name string) string {
	const head, tail = 60, 140
	if len(name) <= head+tail {
		return name
	}
	h, t := head, len(name)-tail
	for h > 0 && !utf8.RuneStart(name[h]) {
		h--
	}
	for t < len(name) && !utf8.RuneStart(name[t]) {
		t++
	}
	return name[:h] + "…" + name[t:]
}
