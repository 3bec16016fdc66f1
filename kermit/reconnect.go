package kermit

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Reconnect is how a client goes on when its session is lost (its
// control link or its data path broken: a reset, a server restarted): it
// dials a successor, which takes the lost session's place and moves what
// it had under way again, resuming, then the rest. Dial must return a
// session logged in to the same server, in the same directory, its
// Events set as the lost one's were.
//
// Tries is how many dials a loss gets, the first after Wait, each next
// after twice the wait before, at most maxReconnectWait. A successor lost
// before it moved anything counts as a failed dial of the same loss, so
// that a server that takes the login and drops the session again is not
// dialled for ever.
type Reconnect struct {
	Dial  func(ctx context.Context) (*Session, error)
	Tries int
	Wait  time.Duration
}

// maxReconnectWait caps the wait between two dials of a loss.
const maxReconnectWait = 30 * time.Second

// reconnecting is one loss-and-successor history of a Reconnect: the
// dials spent on the loss under way.
type reconnecting struct {
	rc    *Reconnect
	spent int
	wait  time.Duration
	// moved is set by a successor's events (FileProgress, FileDone,
	// FileSaved, a file found whole): it moved something, and its loss
	// is a new one, with all its tries.
	moved atomic.Bool
}

func newReconnecting(rc *Reconnect) *reconnecting {
	if rc == nil || rc.Dial == nil || rc.Tries <= 0 {
		return nil
	}
	return &reconnecting{rc: rc}
}

// watch returns tell, noting (moved) what says the session got on.
func (r *reconnecting) watch(tell func(Event)) func(Event) {
	return func(e Event) {
		switch e.Kind {
		case FileProgress, FileDone, FileSaved:
			r.moved.Store(true)
		case FileSkipped:
			if errors.Is(e.Err, ErrAlreadyThere) {
				r.moved.Store(true)
			}
		}
		if tell != nil {
			tell(e)
		}
	}
}

// successor dials lost's successor, waiting between tries, and returns
// it with its Events watched, or the last dial's error (or the lost
// error, said so, when its tries are spent). why is lost's error.
func (r *reconnecting) successor(ctx context.Context, lost *Session, why error) (*Session, error) {
	if r.moved.Swap(false) {
		r.spent, r.wait = 0, 0 // a new loss
	}
	var last error
	for r.spent < r.rc.Tries {
		r.spent++
		if r.wait == 0 {
			r.wait = max(r.rc.Wait, time.Millisecond)
		} else {
			r.wait = min(2*r.wait, maxReconnectWait)
		}
		lost.cfg.Log.Warn("the session was lost; reconnecting", "in", r.wait.Round(time.Millisecond), "try", fmt.Sprintf("%d of %d", r.spent, r.rc.Tries), "err", why)
		t := time.NewTimer(r.wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
		s, err := r.rc.Dial(ctx)
		if err == nil {
			s.cfg.Events = r.watch(s.cfg.Events)
			return s, nil
		}
		last = err
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
	}
	if last == nil {
		return nil, fmt.Errorf("lost again before it moved anything, %d times", r.spent)
	}
	return nil, fmt.Errorf("%d tries: %w", r.spent, last)
}

// lostBy reports whether err, which ended a group or a command of s,
// means that s itself is gone: its link ended, its data path failed, or
// it failed in a way that is no answer of its peer's (a reset, a
// timeout). Not a file group that ended with files failed, a cancel,
// or an E from a peer whose session lives on (its disk full, a refusal):
// a successor would meet those again.
func (s *Session) lostBy(ctx context.Context, err error) bool {
	var ge *GroupError
	var pe *PeerError
	var rg *RefusedGetError
	switch {
	case err == nil, ctx.Err() != nil, errors.As(err, &ge), errors.As(err, &rg), errors.Is(err, ErrCanceled):
		return false
	case errors.As(err, &pe):
		// A server whose data path failed says so in an E and closes
		// its data connections: this side's may not have seen the
		// close yet.
		return s.linkErr != nil || s.dataFailsWithin(ctx, peerDataCloseWait)
	}
	return true
}

// peerDataCloseWait is how long lostBy waits, after an E, for the data
// path to fail as the peer closes it.
const peerDataCloseWait = time.Second

// dataFailsWithin reports whether s's data path has failed, or fails
// within d.
func (s *Session) dataFailsWithin(ctx context.Context, d time.Duration) bool {
	df, ok := s.data.(DataFailure)
	if !ok {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-df.Failed():
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}
