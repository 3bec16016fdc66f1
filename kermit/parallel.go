package kermit

import (
	"context"
	"errors"
	"io/fs"
	"slices"
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
// Directories keep the guarantees of one group (protocol.md §5.4): a
// first group on sessions[0] makes every directory of the tree, private
// to its owner at least as much as the sender's is and writable by the
// owner, before any file goes; once every session has sent its files, one
// last group gives the directories their exact permissions and times, so
// that no file lands in a directory after its time was set.
//
// The error is the first that ended a session, or a *GroupError naming
// every file not transferred. Files that no session took because all of
// them failed are reported as not begun (ErrNotBegun).
func SendParallel(ctx context.Context, sessions []*Session, files []OutgoingFile) error {
	if len(sessions) == 1 {
		return sessions[0].Send(ctx, files)
	}
	var dirs, regular []OutgoingFile
	for _, f := range files {
		if f.Dir {
			dirs = append(dirs, f)
		} else {
			regular = append(regular, f)
		}
	}
	var failed []string
	var hard error
	note := func(err error) {
		var ge *GroupError
		switch {
		case err == nil:
		case errors.As(err, &ge):
			failed = append(failed, ge.Failed...)
		case hard == nil:
			hard = err
		}
	}

	dirAttrs := false
	if len(dirs) > 0 {
		first := make([]OutgoingFile, len(dirs))
		for i, d := range dirs {
			// Made private as the sender's is, and writable by its owner
			// for the files to come; no time yet (it would not last).
			d.Mode = d.Mode&fs.ModeSticky | d.Mode.Perm() | 0o700
			d.ModeKnown = true
			d.ModTime = time.Time{}
			first[i] = d
		}
		err := sessions[0].Send(ctx, first)
		if err != nil {
			var ge *GroupError
			if !errors.As(err, &ge) {
				sessions[0].notBegun(regular, nil)
				return err
			}
			failed = append(failed, ge.Failed...)
		}
		dirAttrs = sessions[0].neg.dirAttrs
	}

	var mu sync.Mutex
	taken := 0
	next := func() (OutgoingFile, bool) {
		mu.Lock()
		defer mu.Unlock()
		if taken >= len(regular) {
			return OutgoingFile{}, false
		}
		taken++
		return regular[taken-1], true
	}
	errs := make([]error, len(sessions))
	ended := make([]time.Time, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.SendFrom(ctx, next)
			ended[i] = time.Now()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		note(err)
	}
	if taken < len(regular) {
		sessions[0].notBegun(regular[taken:], nil)
	}

	if dirAttrs {
		// The last group goes on the session that finished last without
		// failing: it has been idle least.
		last := -1
		for i := range sessions {
			var ge *GroupError
			if (errs[i] == nil || errors.As(errs[i], &ge)) && (last < 0 || ended[i].After(ended[last])) {
				last = i
			}
		}
		var final []OutgoingFile
		for _, d := range dirs {
			if !slices.Contains(failed, d.Name) {
				final = append(final, d)
			}
		}
		if last >= 0 && len(final) > 0 {
			note(sessions[last].Send(ctx, final))
		}
	}
	if hard != nil {
		return hard
	}
	if len(failed) > 0 {
		return &GroupError{Failed: failed}
	}
	return nil
}
