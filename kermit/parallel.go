package kermit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// SendParallel sends files to one receiver over several sessions at once
// (each with its own control connection: a Kermit window of 31 packets
// carries about ten small files a round trip, so more sessions carry more
// over a long path, and spread a receiver's per-file work over its
// cores). Each session sends its own file group; the files go to
// whichever session is ready for the next, so sessions that run slower
// take fewer.
//
// Directories keep the guarantees of one group (protocol.md §7, "Several
// sessions"): first groups (spread over the sessions) make every
// directory, as private as the sender's and writable by the owner,
// before any file goes; once every
// session has sent its files, one last group sends every directory with
// its permissions and time, given at its end, so that no file lands in a
// directory after its time was set.
//
// The error is the first that ended a session that had taken files, or a
// *GroupError naming every file not transferred. A session that fails
// before it takes a file is passed over while another goes on. Files that
// no session took because all of them failed are reported as not begun
// (ErrNotBegun).
func SendParallel(ctx context.Context, sessions []*Session, files []OutgoingFile) error {
	return SendParallelList(ctx, sessions, ListOf(files))
}

// SendParallelList is SendParallel of a FileList, which it walks as the
// sessions take its files: what it keeps of a file is dropped once the
// receiver says it saved it (the directories are kept, for the last
// group).
func SendParallelList(ctx context.Context, sessions []*Session, list FileList) error {
	return SendParallelWith(ctx, sessions, list, SendOptions{})
}

// SendOptions are the options of SendParallelWith.
type SendOptions struct {
	// Reconnect, if set, follows each session lost on the way with a
	// successor of its own (the dials one at a time).
	Reconnect *Reconnect
}

// SendParallelWith is SendParallelList with options.
func SendParallelWith(ctx context.Context, sessions []*Session, list FileList, o SendOptions) error {
	list = list.orNone()
	if len(sessions) == 1 {
		return sendConfirming(ctx, sessions[0], list, o.Reconnect)
	}
	var dirs []OutgoingFile
	listed := map[string]bool{}
	for d := range list.Dirs {
		dirs = append(dirs, d)
		listed[d.Name] = true
	}
	// The files yet to go, pulled by one session at a time. Their
	// directories were made; one that was not listed in Dirs (a walk
	// found it since) goes in the last group.
	var unlisted []OutgoingFile
	files, stop := iter.Pull(func(yield func(OutgoingFile) bool) {
		for f := range list.All {
			switch {
			case !f.Dir:
				if !yield(f) {
					return
				}
			case !listed[f.Name]:
				unlisted = append(unlisted, f)
			}
		}
	})
	defer stop()
	rest := func(yield func(OutgoingFile) bool) {
		for {
			f, ok := files()
			if !ok || !yield(f) {
				return
			}
		}
	}
	var res outcome
	gate := &dialGate{}
	re := newReconnectingIn(o.Reconnect, gate)
	var lostEarly []error // by session: lost making directories

	// The first group: every directory, made before any file goes as
	// one group makes it before its files: as private as the sender's
	// (a file's arrival would make it 0755, less the receiver's umask)
	// and writable by its owner, one already there too (a rerun finds
	// the 0555 directories of the last copy), with no time yet (it
	// would not last).
	var first []OutgoingFile
	for _, d := range dirs {
		if d.ModeKnown || d.Mode != 0 {
			d.Mode = d.Mode&fs.ModeSticky | d.Mode.Perm() | 0o700
		}
		d.ModTime = time.Time{}
		first = append(first, d)
	}
	var notMade []string // directories the first group could not make
	dirAttrs := false
	if len(first) > 0 {
		// Spread over the sessions too, each directory after its own
		// parents of the tree (again, where another session has them):
		// made by another's MkdirAll, a parent would take its child's
		// mode, not its own.
		shares := make([][]OutgoingFile, min(len(sessions), len(first)))
		index := map[string]int{}
		for i, d := range first {
			index[d.Name] = i
		}
		in := make([]map[string]bool, len(shares))
		for i, d := range first {
			k := i % len(shares)
			if in[k] == nil {
				in[k] = map[string]bool{}
			}
			var up []OutgoingFile
			for p := path.Dir(d.Name); p != "." && p != "/" && !in[k][p]; p = path.Dir(p) {
				if j, ok := index[p]; ok {
					up = append(up, first[j])
					in[k][p] = true
				}
			}
			slices.Reverse(up)
			shares[k] = append(append(shares[k], up...), d)
			in[k][d.Name] = true
		}
		errs := inParallel(len(shares), func(i int) error { return sessions[i].Send(ctx, shares[i]) })
		// A session that failed here (its link lost) is left out, and
		// its directories go on another.
		var good []*Session
		var again []OutgoingFile
		var lost error
		var failed []int
		for i, s := range sessions {
			var ge *GroupError
			switch {
			case i >= len(errs) || errs[i] == nil:
				good = append(good, s)
			case errors.As(errs[i], &ge):
				notMade = append(notMade, ge.Failed...)
				good = append(good, s)
			default:
				failed = append(failed, i)
				again = append(again, shares[i]...)
				if lost == nil {
					lost = errs[i]
				}
			}
		}
		if ctx.Err() != nil {
			sessions[0].notBegun(rest, nil)
			sessions[0].notBegun(list.Late, nil)
			return context.Cause(ctx)
		}
		if len(good) == 0 {
			// Every session lost as it began (a server restarting: QA
			// af): nothing has moved, so a successor of the first that
			// was lost makes every directory and sends the files alone.
			succ, at, err := dirsAfterLoss(ctx, re, sessions, errs, again)
			var ge *GroupError
			if succ == nil {
				sessions[0].notBegun(rest, nil)
				sessions[0].notBegun(list.Late, nil)
				return cmp.Or(err, lost)
			}
			if errors.As(err, &ge) {
				notMade = append(notMade, ge.Failed...)
			}
			good, again = []*Session{succ}, nil
			failed = slices.DeleteFunc(failed, func(i int) bool { return i == at })
		}
		var early []*Session
		var earlyErrs []error
		for _, i := range failed {
			if re != nil {
				// Followed by a successor of its own as the files go
				// (below), if it was lost.
				early, earlyErrs = append(early, sessions[i]), append(earlyErrs, errs[i])
				continue
			}
			if len(again) > 0 {
				sessions[i].cfg.Log.Warn("a session failed making directories; the others go on", "err", errs[i])
			}
		}
		if len(again) > 0 {
			var ge *GroupError
			if err := good[0].Send(ctx, again); errors.As(err, &ge) {
				notMade = append(notMade, ge.Failed...)
			} else if err != nil {
				sessions[0].notBegun(rest, nil)
				sessions[0].notBegun(list.Late, nil)
				return err
			}
		}
		sessions = append(good, early...)
		lostEarly = append(make([]error, len(good)), earlyErrs...)
		res.add(&GroupError{Failed: notMade})
		dirAttrs = sessions[0].neg.dirAttrs
	}
	if lostEarly == nil {
		lostEarly = make([]error, len(sessions))
	}

	tr := newSendTracker(len(sessions))
	saved := make([]func(Event), len(sessions))
	for i, s := range sessions {
		saved[i] = s.cfg.Events
		s.cfg.Events = tr.events(i, s.cfg.Events)
	}
	var mu sync.Mutex
	took := make([]int, len(sessions))
	ended := make([]time.Time, len(sessions))
	take := func(i int) func() (OutgoingFile, bool) {
		return func() (OutgoingFile, bool) {
			mu.Lock()
			defer mu.Unlock()
			f, ok := files()
			if ok {
				took[i]++
				tr.hand(i, f)
			}
			return f, ok
		}
	}
	began := slices.Clone(sessions)   // before successors take places
	sessions = slices.Clone(sessions) // the caller's stay as they were
	restores := make([][]func(), len(sessions))
	errs := inParallel(len(sessions), func(i int) error {
		defer func() { ended[i] = time.Now() }()
		err := lostEarly[i]
		if err == nil {
			err = sessions[i].SendFrom(ctx, take(i))
		}
		// A session lost on the way is followed by its own successor
		// (Reconnect), which sends again what it was cut off in,
		// resuming, then takes files as it did: the sessions stay as
		// many (QA ap: after a server restart a four-session send went
		// on with one). The dials are one at a time (dialGate).
		return reconnectAfter(ctx, err, &sessions[i], i, tr, newReconnectingIn(o.Reconnect, gate), fileSource{next: take(i)}, nil, &restores[i])
	})
	good := finishedWell(errs, ended) // the last to finish first
	for i, err := range errs {
		var ge *GroupError
		if err == nil || errors.As(err, &ge) || len(good) == 0 || ctx.Err() != nil {
			continue
		}
		if took[i] == 0 && len(good) > 0 {
			// It failed before it took a file (its server dropped it
			// while idle, say): the others sent its share, as if it had
			// never opened.
			sessions[i].cfg.Log.Warn("a session failed before it sent a file; the others sent them", "err", err)
			errs[i] = nil
			continue
		}
		// Lost with files under way, and not followed (no Reconnect,
		// or its dials spent): one that finished well sends them again,
		// resuming, so that what the receiver stored of them is found
		// whole (and reported done) and a partial goes on. The files it
		// had sent and seen confirmed stay done. One lost in the
		// take-over too leaves what is still cut off to the next.
		sessions[good[0]].cfg.Log.Warn("a session was lost; another sends its files under way again", "files", len(tr.cutFiles(i)), "err", err)
		errs[i] = nil
		for len(tr.cutFiles(i)) > 0 && len(good) > 0 {
			j := good[0]
			s := sessions[j]
			resume := s.cfg.Resume
			s.cfg.Resume = true
			tr.standIn(j, i)
			// (Those it does not begin stay cut off, for the next: not
			// told not begun.)
			errs[i] = s.sendFrom(ctx, fileSource{next: sliceSource(tr.cutFiles(i)).next})
			tr.standIn(j, j)
			s.cfg.Resume = resume
			if errs[i] == nil || errors.As(errs[i], &ge) || ctx.Err() != nil {
				break
			}
			good = good[1:]
		}
		// What the lost session failed on its own stays failed.
		errs[i] = withFailed(errs[i], tr.failedOf(i))
	}
	for i, s := range began {
		s.cfg.Events = saved[i]
	}
	for _, fs := range restores {
		for _, f := range fs {
			f()
		}
	}
	tr.flush()
	for _, err := range errs {
		res.add(err)
	}
	sessions[0].notBegun(rest, nil) // what no session took
	late := slices.Collect(list.Late)

	// The last group: what must come after every file, on a session that
	// is still good. Not after a failure: as in one group, directories
	// keep the first group's private modes then, and no times.
	var last []OutgoingFile
	if res.hard == nil && len(good) > 0 {
		last = late
		if dirAttrs {
			for _, d := range dirs {
				if !slices.Contains(notMade, d.Name) {
					last = append(last, d)
				}
			}
		}
		last = append(last, unlisted...)
		if len(last) > 0 {
			res.add(sessions[good[0]].Send(ctx, last))
		}
	} else {
		sessions[0].notBegun(slices.Values(late), nil)
	}
	return res.err()
}

// sendConfirming is Send on one session, which, when the receiver ends
// the group with an error (an E: the session lives on), sends the files
// it left under way or unconfirmed again, resuming: those it stored
// whole are found so and told done, and only what fails again is told
// failed. (A receiver that could not give one file its final name
// failed the group, and every file of it was told "not confirmed".) As
// SendParallel's take-over, with the session standing in for itself.
//
// With rc, a session lost on the way is followed by a successor
// (Reconnect), which sends the directories and the files cut off again,
// resuming, then the files not yet begun, as one group.
func sendConfirming(ctx context.Context, s *Session, list FileList, rc *Reconnect) error {
	tr := newSendTracker(1)
	tell := s.cfg.Events
	s.cfg.Events = tr.events(0, tell)
	defer func(s *Session) { s.cfg.Events = tell }(s)
	var dirs []OutgoingFile // those sent, for the second pass
	next, stop := iter.Pull(list.All)
	defer stop()
	var late []OutgoingFile
	lateRead := false
	readLate := func() {
		if !lateRead {
			late, lateRead = slices.Collect(list.Late), true
		}
	}
	src := fileSource{
		next: func() (OutgoingFile, bool) {
			f, ok := next()
			if !ok {
				readLate()
				if len(late) > 0 {
					f, late, ok = late[0], late[1:], true
				}
			}
			switch {
			case !ok:
			case f.Dir:
				dirs = append(dirs, f)
			case s.neg.peerKerf:
				// (A classic receiver never says a file is saved:
				// there is no second pass to keep it for.)
				tr.hand(0, f)
			}
			return f, ok
		},
		rest: func(yield func(OutgoingFile) bool) {
			for f, ok := next(); ok; f, ok = next() {
				if !yield(f) {
					return
				}
			}
			readLate()
			for _, f := range late {
				if !yield(f) {
					return
				}
			}
		},
	}
	re := newReconnecting(rc)
	rest := src.rest
	if re != nil {
		// Those never taken are the successor's, if the session is
		// lost; said not begun at the end if none goes on.
		src.rest = nil
	}
	var restore []func()
	defer func() {
		for _, f := range restore {
			f()
		}
	}()
	err := reconnectAfter(ctx, s.sendFrom(ctx, src), &s, 0, tr, re, src, func() []OutgoingFile { return dirs }, &restore)
	if re != nil && err != nil {
		s.notBegun(rest, nil)
	}
	var pe *PeerError
	// Only when every file it left was sent whole and not yet confirmed
	// (the E came at the group's end, not while data moved: a server
	// shutting down, a disk full, which a second try would only meet
	// again).
	// (On a line, only to a receiver that says it stays for it.)
	if err != nil && errors.As(err, &pe) && s.neg.peerKerf && (s.cfg.Reliable || s.neg.secondPass) && ctx.Err() == nil && tr.allNotSaved(0) {
		// The directories first, since the receiver that failed the
		// group gave none its mode and time (it does at a group's good
		// end), then the files cut off; of a name, only its first file
		// (a second is the stub that says it was not sent).
		cut := tr.cutFiles(0)
		again := append(dirs, cut...)
		if len(cut) > 0 {
			// What failed on its own in the first pass (a file refused,
			// the stub of a second file of a name) stays failed, whatever
			// the second pass tells of another file of its name.
			own := tr.failedNames(0)
			s.cfg.Log.Info("the receiver failed the group; its files under way are sent again, resuming, to confirm them", "files", len(again), "err", err)
			resume := s.cfg.Resume
			s.cfg.Resume = true
			tr.takeOver(0, 0)
			// A receiver that does not stay for the second pass (a
			// serial one of one group, from before it took one) ends
			// the link, and the files would be told not begun: they
			// keep the first pass's word instead.
			first, tell2 := err, s.cfg.Events
			var held []Event
			s.cfg.Events = func(e Event) {
				if e.Kind == FileFailed && errors.Is(e.Err, ErrNotBegun) {
					held = append(held, e)
					return
				}
				tell2(e)
			}
			err2 := s.Send(ctx, again)
			s.cfg.Events = tell2
			var ge2 *GroupError
			for _, e := range held {
				if err2 != nil && !errors.As(err2, &pe) && !errors.As(err2, &ge2) {
					e.Err = &CutOffError{&savingFailedError{first}}
				}
				tell2(e)
			}
			tr.standIn(0, 0)
			s.cfg.Resume = resume
			var ge *GroupError
			switch {
			case err2 == nil, errors.As(err2, &ge):
				// Every file confirmed, or refused on its own: what
				// failed so in either pass is what stays failed.
				failed := own
				for _, n := range tr.failedOf(0) {
					if !slices.Contains(failed, n) {
						failed = append(failed, n)
					}
				}
				if ge != nil {
					failed = slices.DeleteFunc(failed, func(n string) bool { return slices.Contains(ge.Failed, n) })
				}
				err = withFailed(err2, failed)
			case errors.As(err2, &pe) && tr.allNotSaved(0):
				// Failed again while saving (a name the receiver cannot
				// rename into): those files fail, each told with the
				// receiver's words (savingFailedError), not the transfer
				// (QA: its E was the command's last word).
				failed := own
				for _, f := range tr.cutFiles(0) {
					if !slices.Contains(failed, f.Name) {
						failed = append(failed, f.Name)
					}
				}
				err = withFailed(nil, failed)
			case errors.As(err2, &pe):
				err = err2 // the receiver's word on what failed again
			}
			// (Else the link went: the first error says why the group
			// failed.)
		}
	}
	tr.flush()
	return err
}

// reconnectAfter goes on after *s, session i of tr, ended its group
// of src's files with err. With re, a loss of *s is followed by a
// successor, which becomes *s (its Events wrapped by tr, restored by the
// functions added to restore) and sends as one group pre's files, if
// pre is set (directories whose attributes the lost group's end did not give), the
// files share i was cut off in, resuming, then the rest of src. The
// error is the last group's.
func reconnectAfter(ctx context.Context, err error, s **Session, i int, tr *shareTracker, re *reconnecting, src fileSource, pre func() []OutgoingFile, restore *[]func()) error {
	reconnected := false
	for re != nil && (*s).lostBy(ctx, err) {
		succ, undo, ferr := re.follow(ctx, *s, err, tr, i)
		if ferr != nil {
			return ferr
		}
		*restore = append(*restore, undo)
		*s, reconnected = succ, true
		var again []OutgoingFile
		if pre != nil {
			again = slices.Clone(pre())
		}
		again = append(again, tr.cutFiles(i)...)
		resume := succ.cfg.Resume
		tr.takeOver(i, i)
		err = succ.sendFrom(ctx, fileSource{next: func() (OutgoingFile, bool) {
			if len(again) > 0 {
				f := again[0]
				again = again[1:]
				succ.cfg.Resume = true
				return f, true
			}
			succ.cfg.Resume = resume
			return src.next()
		}})
		succ.cfg.Resume = resume
		tr.standIn(i, i)
	}
	if reconnected {
		// What failed on its own before the loss stays failed, whatever
		// the successor's group says.
		err = withFailed(err, tr.failedOf(i))
	}
	return err
}

// dirsAfterLoss follows the first of sessions lost making directories
// (errs, theirs) with a successor, which makes dirs, again after each
// loss of its own within re's budget. It returns the successor, the
// place of the session it follows, and the group's error (a
// *GroupError naming directories not made), or nil and why none could
// go on: no session lost (refused, say), no re, or its budget spent.
func dirsAfterLoss(ctx context.Context, re *reconnecting, sessions []*Session, errs []error, dirs []OutgoingFile) (*Session, int, error) {
	if re == nil {
		return nil, -1, nil
	}
	then := time.Now().Add(peerDataCloseWait) // for every session's E
	for i, s := range sessions {
		if i >= len(errs) || !s.lostByThen(ctx, errs[i], then) {
			continue
		}
		err := errs[i]
		for s.lostBy(ctx, err) {
			succ, serr := re.successor(ctx, s, err)
			if serr != nil {
				return nil, -1, fmt.Errorf("%w (not reconnected: %w)", err, serr)
			}
			s, err = succ, succ.Send(ctx, dirs)
			var ge *GroupError
			if err == nil || errors.As(err, &ge) {
				return s, i, err
			}
		}
		return nil, -1, err
	}
	return nil, -1, nil
}

// finishedWell returns the sessions whose group ended well (no error,
// or files of their own failed), those that finished last first when
// ended says when.
func finishedWell(errs []error, ended []time.Time) []int {
	var good []int
	for i, err := range errs {
		var ge *GroupError
		if err == nil || errors.As(err, &ge) {
			good = append(good, i)
		}
	}
	if ended != nil {
		slices.SortStableFunc(good, func(a, b int) int { return ended[b].Compare(ended[a]) })
	}
	return good
}

// lostGet reports whether a session's GET ended because the session was
// lost (its link, its data path, or the server's end of them, which it
// says in an E), so that another may take its share over: not a group
// that ended with files failed, nor the server's refusal of the GET
// itself (no such file, not a regular file), which it would give the
// other session too.
func lostGet(err error) bool {
	var ge *GroupError
	var rg *RefusedGetError
	return err != nil && !errors.As(err, &ge) && !errors.As(err, &rg)
}

// withFailed is err with the files failed also named, unless err ended
// its group (then it stands alone, and the files were told).
func withFailed(err error, failed []string) error {
	var ge *GroupError
	switch {
	case len(failed) == 0:
		return err
	case err == nil:
		return &GroupError{Failed: failed}
	case errors.As(err, &ge):
		all := slices.Clone(ge.Failed)
		for _, n := range failed {
			if !slices.Contains(all, n) {
				all = append(all, n)
			}
		}
		return &GroupError{Failed: all}
	}
	return err
}

// outcome merges the results of several groups: the first error that
// ended one, and the files not transferred of the others (GroupError),
// each named once.
type outcome struct {
	hard   error
	failed []string
}

func (o *outcome) add(err error) {
	var ge *GroupError
	switch {
	case err == nil:
	case errors.As(err, &ge):
		for _, f := range ge.Failed {
			if !slices.Contains(o.failed, f) {
				o.failed = append(o.failed, f)
			}
		}
	case o.hard == nil:
		o.hard = err
	}
}

func (o *outcome) err() error {
	if o.hard != nil {
		return o.hard
	}
	if len(o.failed) > 0 {
		return &GroupError{Failed: o.failed}
	}
	return nil
}

// inParallel runs f(0) .. f(n-1) at once and returns their errors.
func inParallel(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errs
}

// ErrNoShares is why GetParallel fell back to one session: the server
// does not hand out shares of a GET (not a kerf server, or one from
// before them).
var ErrNoShares = errors.New("the server does not split a GET into shares")

// GetParallel fetches spec from a kerf server over several sessions at
// once, each asking for its share of the files (REMOTE SET kerf-share
// k/n, then the GET; protocol.md §8) and receiving into its own store of
// stores (one per session, each on the same tree). Directories come in
// every share, and each session makes them before its files, as one
// group does; their permissions and times are given once every session
// is done, the deepest first, through stores[0], so that no file lands
// in a directory after its time was set.
//
// If the server refuses shares, the whole GET goes over sessions[0], and
// the result is that GET's. Otherwise the error is the first that ended
// a session, or a *GroupError naming every file not transferred.
func GetParallel(ctx context.Context, sessions []*Session, spec string, o GetOptions, stores []Store) error {
	o.congestionTold = new(sync.Once)
	if len(sessions) == 1 {
		if re := newReconnecting(o.Reconnect); re != nil {
			return getReconnecting(ctx, sessions[0], spec, o, stores[0], re)
		}
		return sessions[0].GetWith(ctx, spec, o, stores[0])
	}
	n := len(sessions)
	asked := inParallel(n, func(i int) error {
		_, err := sessions[i].Generic(ctx, 'S', shareParam, share{i, n}.String())
		return err
	})
	followed := newReconnecting(o.Reconnect) != nil
	dead := make([]error, n)
	for i, err := range asked {
		if err == nil {
			continue
		}
		var pe *PeerError
		if followed && ctx.Err() == nil && sessions[i].lostBy(ctx, err) {
			// Lost already (an earlier GET of the command lost it, and
			// a successor or another session took its share over): it
			// is followed below as any lost session is.
			dead[i] = err
			continue
		}
		if ctx.Err() != nil || !errors.As(err, &pe) {
			return err // not a refusal: the link failed
		}
		if !errors.As(asked[0], &pe) {
			// Its share would stay for the GET below: the whole.
			if _, err := sessions[0].Generic(ctx, 'S', shareParam, "0/1"); err != nil {
				return err
			}
		}
		sessions[0].cfg.Log.Info("one session for the GET", "err", fmt.Errorf("%w: %v", ErrNoShares, err))
		return sessions[0].GetWith(ctx, spec, o, stores[0])
	}

	held := &heldDirs{}
	tr := newShareTracker(n, o.Recursive)
	saved := make([]func(Event), n)
	for i, s := range sessions {
		s.holdDirs = held
		saved[i] = s.cfg.Events
		s.cfg.Events = tr.events(i, s.cfg.Events)
	}
	get := func(i, sh int, again bool) error {
		oi := o
		// Each session tells the server of the skipped files of its
		// own share only.
		oi.Skip = nil
		for _, e := range o.Skip {
			if (share{sh, n}).has(e.Name) {
				oi.Skip = append(oi.Skip, e)
			}
		}
		if again {
			return sessions[i].getAgain(ctx, spec, oi, stores[i])
		}
		return sessions[i].GetWith(ctx, spec, oi, stores[i])
	}
	began := slices.Clone(sessions)   // before successors take places
	sessions = slices.Clone(sessions) // the caller's stay as they were
	restores := make([][]func(), n)
	// follow puts successors (Reconnect) in the place of session i, lost
	// with err, one after another while each is lost: each asks for
	// share i again, resuming.
	follow := func(i int, err error, re *reconnecting) error {
		for lostGet(err) && sessions[i].lostBy(ctx, err) {
			succ, undo, ferr := re.follow(ctx, sessions[i], err, tr, i)
			if ferr != nil {
				return ferr
			}
			succ.holdDirs = held
			restores[i] = append(restores[i], func() { undo(); succ.holdDirs = nil })
			sessions[i] = succ
			if _, err = succ.Generic(ctx, 'S', shareParam, share{i, n}.String()); err == nil {
				tr.takeOver(i, i)
				err = withFailed(get(i, i, true), tr.failedOf(i))
				tr.standIn(i, i)
			}
		}
		return err
	}
	gate := &dialGate{}
	errs := inParallel(n, func(i int) error {
		err := dead[i]
		if err == nil {
			err = get(i, i, false)
		}
		// A session lost on the way is followed by its own successor,
		// so the sessions stay as many (QA ap); the dials are one at a
		// time (dialGate).
		if re := newReconnectingIn(o.Reconnect, gate); re != nil {
			return follow(i, err, re)
		}
		return err
	})
	// A session lost on the way (its link, its server's end of it) and
	// not followed (no Reconnect, or its dials spent) leaves the rest of
	// its share to one that finished well, which asks for that share
	// again, resuming: the files the lost one fetched are found whole
	// (and not reported twice), and the one it was cut off in goes on
	// from its partial. One lost in the take-over too leaves it to the
	// next, while there is one.
	good := finishedWell(errs, nil)
	for i, err := range errs {
		var ge *GroupError
		if !lostGet(err) || ctx.Err() != nil {
			continue
		}
		for len(good) > 0 {
			k := i % len(good)
			j := good[k]
			sessions[j].cfg.Log.Warn("a session of the GET was lost; another fetches the rest of its share", "share", share{i, n}.String(), "err", err)
			if _, serr := sessions[j].Generic(ctx, 'S', shareParam, share{i, n}.String()); serr != nil {
				// Lost too since it finished: the next one tries.
				good = slices.Delete(good, k, k+1)
				continue
			}
			tr.standIn(j, i)
			errs[i] = withFailed(get(j, i, true), tr.failedOf(i))
			tr.standIn(j, j)
			if errors.As(errs[i], &ge) || errs[i] == nil || ctx.Err() != nil {
				// Its own share again, for whatever it is asked next.
				sessions[j].Generic(ctx, 'S', shareParam, share{j, n}.String())
				break
			}
			// Lost in the take-over too: the next tries, from what
			// is there now.
			good = slices.Delete(good, k, k+1)
		}
	}
	for i, s := range began {
		s.holdDirs = nil
		s.cfg.Events = saved[i]
	}
	for _, fs := range restores {
		for _, f := range fs {
			f()
		}
	}
	tr.flush()
	var res outcome
	for _, err := range errs {
		res.add(err)
	}
	if res.hard == nil {
		// Given as one group gives them at its end (not after a
		// failure: the directories keep the modes they were made with).
		sessions[0].dirsToFinish = held.shallowFirst()
		sessions[0].finishDirs(stores[0])
	}
	return res.err()
}

// getAgain is GetWith asking for spec again, resuming, to take over
// what a lost session fetched of it: the files it got whole are found
// so, and a partial goes on.
func (s *Session) getAgain(ctx context.Context, spec string, o GetOptions, store Store) error {
	resume := o.Resume
	o.Resume = true
	if !o.Recursive && !resume {
		// Asked resuming (REGET), a kerf server walks into the
		// directories a plain GET leaves out: not here.
		exclude := o.Exclude
		o.Exclude = append(slices.Clone(exclude), "*/")
		err := s.GetWith(ctx, spec, o, store)
		if !errors.Is(err, ErrNoExclude) {
			return err
		}
		o.Exclude = exclude // an older kerf: as before
	}
	return s.GetWith(ctx, spec, o, store)
}

// getReconnecting is GetWith on one session that a loss does not end
// (GetOptions.Reconnect): a successor asks for spec again, resuming,
// and what the lost session told of its files is not told again, as in
// GetParallel's take-over of a share.
func getReconnecting(ctx context.Context, s *Session, spec string, o GetOptions, store Store, re *reconnecting) error {
	tr := newShareTracker(1, o.Recursive)
	tell := s.cfg.Events
	s.cfg.Events = tr.events(0, tell)
	defer func(s *Session) { s.cfg.Events = tell }(s)
	err := s.GetWith(ctx, spec, o, store)
	for lostGet(err) && s.lostBy(ctx, err) {
		succ, undo, ferr := re.follow(ctx, s, err, tr, 0)
		if ferr != nil {
			err = ferr
			break
		}
		defer undo()
		s = succ
		tr.takeOver(0, 0)
		err = withFailed(s.getAgain(ctx, spec, o, store), tr.failedOf(0))
		tr.standIn(0, 0)
	}
	tr.flush()
	return err
}

// follow dials the successor of lost, session i of tr, lost with why,
// and has tr tell its Events; undo gives it back its own. Without one,
// err is why, saying that the dials failed.
func (r *reconnecting) follow(ctx context.Context, lost *Session, why error, tr *shareTracker, i int) (succ *Session, undo func(), err error) {
	succ, err = r.successor(ctx, lost, why)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (not reconnected: %w)", why, err)
	}
	tell := succ.cfg.Events
	succ.cfg.Events = tr.events(i, tell)
	return succ, func() { succ.cfg.Events = tell }, nil
}

// shareTracker sits between the sessions of a SendParallel or
// GetParallel and their Events. A directory that cannot be made is
// reported once, by the first session that meets it. A file cut off
// when its session was lost (CutOffError: under way, or done but not
// confirmed saved) is held back, since another session may take it
// over, and reported at the end unless the take-over settled it. What
// the take-over tells of a file its lost session had reported done is
// not told again (only a failure is), and a file the lost one moved
// unconfirmed that the take-over finds whole is told done. Each file
// told done is told saved once, when it is: by the engine's FileSaved
// in whichever session, or, for a file a take-over finds whole, here.
//
// A file told saved is done with: what the tracker knew of it is
// dropped then, so that its memory follows the files not yet saved (a
// kerf receiver saves a long group in parts), not all of a transfer. A
// send's take-over sends only the files cut off. A GET's take-over
// (refetch) asks the server for the whole share again, which comes in
// the order the share's first pass had: the tracker counts the files
// each pass was told of (a file counts at its first event), and a
// take-over passes over what comes within that count that it no longer
// knows (told, saved, forgotten; or skipped, which a GET does not keep).
// Exact for a tree unchanged in between; otherwise off by the files
// added or removed before that point, in what is told only (the share
// is fetched whole either way).
type shareTracker struct {
	mu      sync.Mutex
	forget  bool            // a file told saved is dropped (not in a GET that is not recursive)
	refetch bool            // a recursive GET's: a take-over gets the whole share again
	told    map[string]bool // directories reported failed or skipped
	// files, by share: what was told of each file not yet saved, and of
	// each that failed.
	files []fileStates
	// reached, by share: the most files one pass over it was told of.
	reached []int
	// By session, its pass now: the files it was told of (count), those
	// begun and not ended (under), of those the ones passed over (quiet),
	// and, taking a share over, how many of the share's files came
	// before (limit).
	count        []int
	under, quiet []map[string]bool
	limit        []int
	// listedTold, by share: its files left out for the client's skip
	// list were told (at the end of a pass, all at once:
	// errListedWhole); listedBefore, by session, so at its pass's start.
	listedTold   []bool
	listedBefore []bool
	// handed, by share: the files a send handed its sessions, not yet
	// saved (the first of a name), for a take-over to send again.
	handed []map[string]OutgoingFile
	cut    [][]Event     // by share: files cut off, held back
	failed [][]string    // by share: files told failed on their own
	shares []int         // by session: the share it moves now
	over   []bool        // by session: it takes over a share (another's, or its own again)
	tell   []func(Event) // by session: its own Events, nil or not
}

// newShareTracker is the shareTracker of a GetParallel's n sessions,
// of a recursive GET or not. A take-over of one that is not recursive
// asks for its share resuming (REGET), which a kerf server walks
// recursively: its stream is not the first pass's, and the tracker
// keeps what it told of every file instead (a GET of names and
// wildcards, not of a tree).
func newShareTracker(n int, recursive bool) *shareTracker {
	return newTracker(n, recursive, recursive)
}

// newSendTracker is the shareTracker of a send over n sessions.
func newSendTracker(n int) *shareTracker { return newTracker(n, true, false) }

func newTracker(n int, forget, refetch bool) *shareTracker {
	t := &shareTracker{forget: forget, refetch: refetch, told: map[string]bool{}, files: make([]fileStates, n), reached: make([]int, n),
		count: make([]int, n), under: make([]map[string]bool, n), quiet: make([]map[string]bool, n), limit: make([]int, n),
		listedTold: make([]bool, n), listedBefore: make([]bool, n),
		handed: make([]map[string]OutgoingFile, n), cut: make([][]Event, n), failed: make([][]string, n), shares: make([]int, n), over: make([]bool, n), tell: make([]func(Event), n)}
	for i := range n {
		t.files[i], t.handed[i] = fileStates{}, map[string]OutgoingFile{}
		t.under[i], t.quiet[i] = map[string]bool{}, map[string]bool{}
		t.shares[i] = i
	}
	return t
}

// newPass begins session i's pass over share sh (the lock held).
func (t *shareTracker) newPass(i, sh int, over bool) {
	t.shares[i], t.over[i] = sh, over
	t.count[i], t.limit[i], t.listedBefore[i] = 0, t.reached[sh], t.listedTold[sh]
	t.under[i], t.quiet[i] = map[string]bool{}, map[string]bool{}
}

// counted counts e in session i's pass: whether it begins a file (its
// first event) and whether it ends one.
func (t *shareTracker) counted(i int, e Event) (begins, ends bool) {
	if strings.HasSuffix(e.Name, "/") {
		return false, false // a directory's
	}
	switch {
	case e.Kind == FileStart:
		begins = !t.under[i][e.Name]
		t.under[i][e.Name] = true
	case e.Kind == FileFailed && (isCutOff(e.Err) || errors.Is(e.Err, ErrSaveFailed) || errors.Is(e.Err, ErrNotSaved)):
		// Of a file begun (under way, or done and then not saved):
		// counted then.
		ends = t.under[i][e.Name]
		delete(t.under[i], e.Name)
		return false, ends
	case e.Kind == FileDone, e.Kind == FileSkipped, e.Kind == FileFailed:
		begins, ends = !t.under[i][e.Name], true
		delete(t.under[i], e.Name)
	default:
		return false, false
	}
	if begins {
		t.count[i]++
		t.reached[t.shares[i]] = max(t.reached[t.shares[i]], t.count[i])
	}
	return begins, ends
}

// fileState is what a shareTracker's sessions told of a file.
type fileState uint8

const (
	toldDone    fileState = 1 << iota // told done (not yet saved, where saved files are forgotten)
	toldForGood                       // its end told for good: settled (idem)
	toldSaved                         // told saved (where saved files are not forgotten)
)

// fileStates is a share's fileState by file name; a file of no state
// has no entry.
type fileStates map[string]fileState

func (m fileStates) is(name string, s fileState) bool { return m[name]&s != 0 }

// set turns the states s of name on or off.
func (m fileStates) set(name string, s fileState, on bool) {
	v := m[name]
	if on {
		v |= s
	} else {
		v &^= s
	}
	if v == 0 {
		delete(m, name)
		return
	}
	m[name] = v
}

// hand records that session i was handed f to send (a file of a send:
// what a take-over of its share would send again).
func (t *shareTracker) hand(i int, f OutgoingFile) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sh := t.shares[i]
	if _, ok := t.handed[sh][f.Name]; !ok {
		t.handed[sh][f.Name] = f
	}
}

// cutFiles returns the files handed to share sh that its sessions were
// cut off in, in the order they were cut off.
func (t *shareTracker) cutFiles(sh int) []OutgoingFile {
	t.mu.Lock()
	defer t.mu.Unlock()
	var files []OutgoingFile
	for _, e := range t.cut[sh] {
		if f, ok := t.handed[sh][e.Name]; ok {
			files = append(files, f)
		}
	}
	return files
}

// tellSaved tells the FileSaved e of share sh, once a file for a file
// told done, and forgets the file (forget).
func (t *shareTracker) tellSaved(sh int, e Event) (out [2]Event, n int) {
	if !t.files[sh].is(e.Name, toldDone) || t.files[sh].is(e.Name, toldSaved) {
		return out, 0
	}
	out[0] = e
	if !t.forget {
		t.files[sh].set(e.Name, toldSaved, true)
		return out, 1
	}
	delete(t.files[sh], e.Name)
	delete(t.handed[sh], e.Name)
	// Cut off no more (a take-over saved it): flush, which tells what
	// is cut off and not settled, passes it over.
	t.cut[sh] = slices.DeleteFunc(t.cut[sh], func(c Event) bool { return c.Name == e.Name })
	return out, 1
}

// events returns session i's Events, which reports to tell.
func (t *shareTracker) events(i int, tell func(Event)) func(Event) {
	t.tell[i] = tell
	return func(e Event) {
		t.mu.Lock()
		out, n := t.passAll(i, e)
		t.mu.Unlock()
		if tell != nil {
			for _, e := range out[:n] {
				tell(e)
			}
		}
	}
}

// passAll is what of session i's event e is told: pass's word on it,
// with FileSaved decided here (once a file, for one told done: the
// session that saved it may be one taking over, whose FileDone pass
// does not tell), and the FileSaved a file found whole after it was
// told done unconfirmed gets from no engine.
// (An array, not a slice: every event, progress too, comes this way.)
func (t *shareTracker) passAll(i int, e Event) (out [2]Event, n int) {
	sh := t.shares[i]
	if e.Kind == FileSaved {
		if t.quiet[i][e.Name] {
			return out, 0
		}
		return t.tellSaved(sh, e)
	}
	if t.refetch && e.Kind == FileSkipped && e.Err == errListedWhole {
		// Not of the stream, and told once a share: a take-over's
		// pass tells them again.
		if t.over[i] && t.listedBefore[i] {
			return out, 0
		}
		t.listedTold[sh] = true
		out[0] = e
		return out, 1
	}
	if t.refetch {
		begins, ends := t.counted(i, e)
		if t.over[i] && begins && t.count[i] <= t.limit[i] && t.files[sh][e.Name] == 0 && !t.isCut(sh, e.Name) {
			// Within what the share's earlier pass was told of, and
			// not kept: told then, and saved or skipped.
			t.quiet[i][e.Name] = true
		}
		if t.quiet[i][e.Name] {
			if ends {
				delete(t.quiet[i], e.Name)
			}
			return out, 0
		}
	}
	if told, ok := t.pass(i, e); ok {
		out[n] = told
		n++
	}
	if e.Kind == FileSkipped && errors.Is(e.Err, ErrAlreadyThere) && t.files[sh].is(e.Name, toldDone) && t.isCut(sh, e.Name) {
		// A take-over's "found whole" of a file told done is its
		// saving.
		saved, m := t.tellSaved(sh, Event{Kind: FileSaved, Name: e.Name, Size: e.Size, Bytes: e.Size, Sending: e.Sending, Path: e.Path})
		n += copy(out[n:], saved[:m])
	}
	return out, n
}

// isCutOff reports whether err is a CutOffError (errors.AsType: a
// variable for errors.As, declared in pass, was allocated for every
// event).
func isCutOff(err error) bool {
	_, ok := errors.AsType[*CutOffError](err)
	return ok
}

// pass returns what of session i's event e is told, and whether any.
func (t *shareTracker) pass(i int, e Event) (Event, bool) {
	sh := t.shares[i]
	if strings.HasSuffix(e.Name, "/") && (e.Kind == FileFailed || e.Kind == FileSkipped) {
		again := t.told[e.Name]
		t.told[e.Name] = true
		return e, !again
	}
	if e.Kind == FileFailed && isCutOff(e.Err) {
		// Held back, once a name (a take-over cut off too replaces its
		// lost session's word).
		t.cut[sh] = slices.DeleteFunc(t.cut[sh], func(c Event) bool { return c.Name == e.Name })
		t.cut[sh] = append(t.cut[sh], e)
		t.files[sh].set(e.Name, toldForGood, false)
		return e, false
	}
	if t.over[i] {
		// A take-over, of share sh.
		if t.refetch && t.files[sh].is(e.Name, toldForGood) && !t.files[sh].is(e.Name, toldDone) && slices.Contains(t.failed[sh], e.Name) {
			// Told failed on its own by the lost pass, and fetched
			// again (a GET's take-over gets the whole share): whole
			// this time, it is told done and its failure withdrawn;
			// failed again, it was told so already.
			switch e.Kind {
			case FileDone:
				t.failed[sh] = slices.DeleteFunc(t.failed[sh], func(n string) bool { return n == e.Name })
				t.files[sh].set(e.Name, toldDone, true)
				e.Again = true
				return e, true
			case FileFailed, FileSkipped:
				return e, false
			}
			return e, true // its start and progress
		}
		if t.files[sh].is(e.Name, toldForGood) {
			return e, false // the lost session told its end for good
		}
		if t.files[sh].is(e.Name, toldDone) {
			// Told done by the lost session, not confirmed saved: the
			// take-over only confirms it (found whole, or sent again),
			// unless it fails or is refused, which is told.
			switch {
			case e.Kind == FileSaved:
				return e, true
			case e.Kind == FileDone, e.Kind == FileSkipped && errors.Is(e.Err, ErrAlreadyThere):
				t.files[sh].set(e.Name, toldForGood, true)
				return e, false
			case e.Kind == FileFailed, e.Kind == FileSkipped:
				t.files[sh].set(e.Name, toldForGood, true)
				return e, true
			}
			return e, false // its start and progress
		}
	}
	switch e.Kind {
	case FileDone:
		t.files[sh].set(e.Name, toldDone|toldForGood, true)
	case FileSkipped:
		if errors.Is(e.Err, ErrAlreadyThere) && t.isCut(sh, e.Name) {
			// Moved whole by the lost session, unconfirmed: done.
			e = Event{Kind: FileDone, Name: e.Name, Size: e.Size, Bytes: e.Size, Sending: e.Sending, Path: e.Path}
			t.files[sh].set(e.Name, toldDone|toldForGood, true)
		} else if !t.refetch {
			// (A GET's take-over knows a skipped file by its place.)
			t.files[sh].set(e.Name, toldForGood, true)
			if skipFails(e.Err) {
				// Refused at its A, canceled: failed on its own, as the
				// engine's group error counts it, and so named by a
				// second pass's outcome too (QA: 1,746 refusals were
				// forgotten, exit 0, when the group failed at its end
				// and the files under way were confirmed).
				t.failed[sh] = append(t.failed[sh], e.Name)
			}
		}
	case FileFailed:
		t.files[sh].set(e.Name, toldForGood, true)
		t.failed[sh] = append(t.failed[sh], e.Name)
	}
	return e, true
}

// skipFails reports whether a file skipped for err failed (a refusal, a
// cancel), as against one there whole, declined by a classic receiver
// on purpose, or passed over.
func skipFails(err error) bool {
	return err != nil && !errors.Is(err, ErrAlreadyThere) && !errors.Is(err, ErrDeclined) && !errors.Is(err, ErrPassedOver) && err != errListedWhole
}

// failedOf returns the files share sh's sessions told failed on their
// own (not cut off), for the outcome of a share whose session was lost.
func (t *shareTracker) failedOf(sh int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for _, n := range t.failed[sh] {
		if t.files[sh].is(n, toldForGood) && !t.files[sh].is(n, toldDone) {
			names = append(names, n)
		}
	}
	return names
}

// failedNames returns the files share sh's sessions told failed on
// their own so far.
func (t *shareTracker) failedNames(sh int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.failed[sh])
}

// allNotSaved reports whether share sh has files cut off and every one
// of them was sent whole, only not confirmed saved (ErrNotSaved).
func (t *shareTracker) allNotSaved(sh int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.cut[sh] {
		if !errors.Is(e.Err, ErrNotSaved) {
			return false
		}
	}
	return len(t.cut[sh]) > 0
}

// isCut says whether share sh's session was cut off in the file name.
func (t *shareTracker) isCut(sh int, name string) bool {
	return slices.ContainsFunc(t.cut[sh], func(e Event) bool { return e.Name == name })
}

// standIn makes session i move share sh, taking it over if it is
// another's.
func (t *shareTracker) standIn(i, sh int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.newPass(i, sh, sh != i)
}

// takeOver makes session i take share sh over, its own too: what the
// share's first pass told is not told again.
func (t *shareTracker) takeOver(i, sh int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.newPass(i, sh, true)
}

// flush reports the files cut off that no take-over settled.
func (t *shareTracker) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for sh, cut := range t.cut {
		for _, e := range cut {
			if !t.files[sh].is(e.Name, toldForGood) && t.tell[sh] != nil {
				t.tell[sh](e)
			}
		}
	}
}

// heldDirs collects the directory attributes the sessions of a
// GetParallel would give at the end of their groups (Session.holdDirs).
type heldDirs struct {
	mu   sync.Mutex
	dirs map[string]dirAttrs
}

// shallowFirst returns each directory once, those higher in the tree
// first, as a group receives them (finishDirs gives them last first).
func (h *heldDirs) shallowFirst() []dirAttrs {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]dirAttrs, 0, len(h.dirs))
	for _, d := range h.dirs {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b dirAttrs) int {
		if da, db := strings.Count(a.name, "/"), strings.Count(b.name, "/"); da != db {
			return da - db
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

// hold keeps d for the end of all sessions.
func (h *heldDirs) hold(d dirAttrs) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dirs == nil {
		h.dirs = map[string]dirAttrs{}
	}
	if _, ok := h.dirs[d.name]; !ok {
		// The first received wins, as in one group (two specs may
		// name directories of one name; the second is not stored over
		// the first).
		h.dirs[d.name] = d
	}
}
