package kermit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Reconnect is how a client goes on when its session is lost (its
// control link or its data path broken: a reset, a server restarted): it
// dials a successor, which takes the lost session's place and moves what
// it had under way again, resuming, then the rest. Dial is given the
// lost session, which the engine is done with (Dial should close its
// connections first: a server counts a client's sessions), and must
// return a session logged in to the same server, in the same directory,
// its Events set as the lost one's were.
//
// A loss gets dials until Tries of them were made or For has passed
// since it (either unset: no such bound; one at least), the first after
// Wait, each next after twice the wait before, at most maxReconnectWait.
// A successor lost again before the peer confirmed anything it moved (a
// file saved or found whole, bytes received), and within settledAfter,
// counts as a failed dial of the same loss, so that a server that takes
// the login and loses the session again is not dialled for ever.
type Reconnect struct {
	Dial  func(ctx context.Context, lost *Session) (*Session, error)
	Tries int
	For   time.Duration
	Wait  time.Duration
}

// ErrNoRedial marks an error of Reconnect.Dial that another dial would
// meet again (the server's key changed, the login refused, the
// directory gone): the loss is given up at once.
var ErrNoRedial = errors.New("not dialled again")

// maxReconnectWait caps the wait between two dials of a loss: a server
// back from a restart is found within this (bench/outage.sh
// MODE=restart: with waits doubling to 30 s, one back after 10 s was
// found 5 s late, after 15).
const maxReconnectWait = 5 * time.Second

// minDialTime is the least time a dial of a successor is given when
// Reconnect.For bounds it.
const minDialTime = 20 * time.Second

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// settledAfter is how long a successor must last for its loss to be a
// new one, with all its tries, though the peer confirmed nothing: a
// sender's own progress counts what went into its socket, not what
// arrived, and a big file is confirmed only at its end, so a link that
// drops every few minutes under a long file is followed each time.
const settledAfter = 30 * time.Second

// reconnecting is one session's loss-and-successor history of a
// Reconnect: the dials spent on the loss under way.
type reconnecting struct {
	rc      *Reconnect
	gate    *dialGate // shared by the sessions of one transfer
	spent   int
	since   time.Time // the loss under way
	wait    time.Duration
	dialled time.Time // when the last successor was
	gaveUp  error     // why the dials of a loss were spent in vain: no more
	// moved is set by a successor's events that say the peer took
	// something (FileDone, FileSaved, a file found whole, bytes
	// received): its loss is a new one, with all its tries.
	moved atomic.Bool
}

func newReconnecting(rc *Reconnect) *reconnecting {
	return newReconnectingIn(rc, &dialGate{})
}

// newReconnectingIn is newReconnecting of one of several sessions that
// share gate.
func newReconnectingIn(rc *Reconnect, gate *dialGate) *reconnecting {
	if rc == nil || rc.Dial == nil || rc.Tries <= 0 && rc.For <= 0 {
		return nil
	}
	return &reconnecting{rc: rc, gate: gate}
}

// dialGate is what the sessions of one transfer share of their dials:
// one at a time dials, so that a server restarting is waited for by one
// session's backoff, not by each (their dials and warnings times the
// sessions); one lost with it, taking its turn once the first's
// successor came in, dials at once (the server is back: QA ap, a
// four-session send went on with one session after a restart); and once
// one gives up, the others do too (the same server, out of reach).
type dialGate struct {
	mu       sync.Mutex
	up       time.Time // when a successor last came in
	gaveUp   error
	gaveUpAt time.Time
}

// watch returns tell, noting (moved) what says the session got on.
func (r *reconnecting) watch(tell func(Event)) func(Event) {
	return func(e Event) {
		switch e.Kind {
		case FileDone, FileSaved:
			r.moved.Store(true)
		case FileProgress:
			if !e.Sending {
				r.moved.Store(true)
			}
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
	if r.gaveUp != nil {
		return nil, r.gaveUp
	}
	asked := time.Now()
	r.gate.mu.Lock()
	defer r.gate.mu.Unlock()
	if r.gate.gaveUp != nil && asked.Sub(r.gate.gaveUpAt) < settledAfter {
		// Lost in the same outage: another's dials found no server.
		// (A loss well after is its own: review 58.)
		r.gaveUp = r.gate.gaveUp
		return nil, r.gaveUp
	}
	if r.since.IsZero() || r.moved.Swap(false) || !r.dialled.IsZero() && time.Since(r.dialled) >= settledAfter {
		r.spent, r.wait, r.since = 0, 0, time.Now() // a new loss
	}
	// Another session's successor came in lately (within settledAfter),
	// after this one's own (if any): the server is there, so the first
	// dial of this loss goes at once.
	soon := r.spent == 0 && !r.gate.up.IsZero() && r.gate.up.After(r.dialled) && time.Since(r.gate.up) < settledAfter
	var last error
	for {
		next := max(r.rc.Wait, time.Millisecond)
		if r.wait > 0 {
			next = min(2*r.wait, maxReconnectWait)
		}
		if r.spent > 0 && (r.rc.Tries > 0 && r.spent >= r.rc.Tries || r.rc.For > 0 && time.Since(r.since)+next > r.rc.For) {
			break
		}
		r.spent, r.wait = r.spent+1, next
		try := fmt.Sprint(r.spent)
		if r.rc.Tries > 0 {
			try += fmt.Sprintf(" of %d", r.rc.Tries)
		}
		delay := r.wait
		switch {
		case soon && last == nil:
			delay = 0 // (the waits after it as ever)
			lost.cfg.Log.Info("another session of the transfer was lost too; reconnecting it", "try", try, "err", why)
		case last == nil:
			lost.cfg.Log.Warn("the session was lost; reconnecting", "in", r.wait.Round(time.Millisecond), "try", try, "err", why)
		default:
			lost.cfg.Log.Warn("reconnecting failed; trying again", "in", r.wait.Round(time.Millisecond), "try", try, "err", last)
		}
		lost.event(Event{Kind: Reconnecting, Err: cmp.Or(last, why), Duration: delay, Size: -1})
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
		// A dial is bounded by the budget too (a blackholed connect
		// waits out the client's connect timeout, 30 s by default, or
		// without one the kernel's SYN retries, about two minutes), though
		// never to less than minDialTime, the time a login takes on a
		// slow path, or the whole budget where that is shorter (asked
		// to give up within 10 s, a dial given 20 s ran into the TLS
		// handshake's 15 s: QA).
		dctx, cancel := ctx, context.CancelFunc(func() {})
		if r.rc.For > 0 {
			dctx, cancel = context.WithDeadline(ctx, later(r.since.Add(r.rc.For), time.Now().Add(min(minDialTime, r.rc.For))))
		}
		s, err := r.rc.Dial(dctx, lost)
		cancel()
		if err == nil {
			s.successor = true
			s.cfg.Events = r.watch(s.cfg.Events)
			r.dialled = time.Now()
			r.gate.up = r.dialled
			return s, nil
		}
		last = err
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if errors.Is(err, ErrNoRedial) {
			break
		}
	}
	if last == nil {
		r.gaveUp = fmt.Errorf("lost again before it moved anything, %d times", r.spent)
	} else {
		r.gaveUp = fmt.Errorf("after %d dial(s) in %v: %w", r.spent, time.Since(r.since).Round(time.Second), last)
		r.gate.gaveUp, r.gate.gaveUpAt = r.gaveUp, time.Now()
	}
	return nil, r.gaveUp
}

// AccountEndedPrefix begins the E of a kerf server that ended a
// session because the user's account was removed or changed (its root,
// access, password or key): no successor is dialled for it.
const AccountEndedPrefix = "kerf: the server ended this session: "

// lostBy reports whether err, which ended a group or a command of s,
// means that s itself is gone: its link ended, its data path failed, or
// it failed in a way that is no answer of its peer's (a reset, a
// timeout). Not a file group that ended with files failed, a cancel,
// a data path that could not be opened (its port refused or silent), or
// an E from a peer whose session lives on (its disk full, a refusal): a
// successor would meet those again.
func (s *Session) lostBy(ctx context.Context, err error) bool {
	return s.lostByThen(ctx, err, time.Now().Add(peerDataCloseWait))
}

// lostByThen is lostBy waiting for a data path's close until then (a
// deadline several sessions share, which wait for it one after another).
func (s *Session) lostByThen(ctx context.Context, err error, then time.Time) bool {
	var ge *GroupError
	var pe *PeerError
	var rg *RefusedGetError
	switch {
	case err == nil, ctx.Err() != nil, errors.As(err, &ge), errors.As(err, &rg), errors.Is(err, ErrCanceled), errors.Is(err, ErrFieldTooLong), errors.Is(err, errLengthMismatch):
		return false
	case errors.Is(err, errStreamingSilence):
		return true // a peer silent past the idle timeout: as a link lost
	case peerProtocolError(err):
		// The peer broke the protocol: a new session would meet the same
		// (QA aq: a server's bad blocks or attribute replies had a get or
		// send log in again 10-26 times, two minutes, each meeting it).
		return false
	case errors.Is(err, errOpeningData):
		// Every login would meet it (a firewall, a wrong --data-listen),
		// unless the first's opened: then a successor's failure is the
		// path or the server not back yet, a failed try. Nor if the
		// control connection goes too: the server stopped as the data
		// path opened (a restart; QA af: a get ended, exit 4, where a
		// kill -9 a moment later was survived).
		return s.successor || s.controlLostWithin(ctx, time.Until(then))
	case errors.As(err, &pe) && s.dataNotArrived(pe):
		// The server waited for data connections this side had opened:
		// lost on the way (flaky-test hunt: the GET failed, exit 4,
		// while sessions lost a moment later were taken over).
		return true
	case errors.As(err, &pe) && pe.Msg == ShuttingDown:
		// A server stopping (a restart) says so before it closes: a
		// session that had no data path yet (making directories: QA
		// af) has none to see fail.
		return true
	case errors.As(err, &pe) && strings.HasPrefix(pe.Msg, AccountEndedPrefix):
		// Its account removed or changed: a login again would fail, or
		// go on under other terms (another root), which the user is
		// to decide on (review).
		return false
	case errors.As(err, &pe):
		// A server whose data path failed says so in an E and closes
		// its data connections: this side's may not have seen the
		// close yet.
		return s.linkErr != nil || s.dataFailsWithin(ctx, time.Until(then))
	case errors.As(err, new(*LinkError)):
		return true // (a serial line's read error is a *fs.PathError too)
	case (errors.As(err, new(*fs.PathError)) || errors.As(err, new(*os.LinkError))) && !netErrno(err):
		// This side's own files failed: a disk full or over its quota
		// as a batch was named. A successor would meet it again (QA aj:
		// a GET took it for a loss, and logged in 21 times in two
		// minutes, each failing so).
		return false
	}
	return true
}

// errStreamingSilence is why a receiver of a streamed transfer gave up:
// nothing came within the idle timeout.
var errStreamingSilence = errors.New("timed out on a reliable link")

// peerProtocolError reports whether err is the peer's breach of the
// protocol: a data path's error that says so (datachan.ErrProtocol's
// PeerProtocolError; not a damaged frame header), or the engine's
// ErrProtocol.
func peerProtocolError(err error) bool {
	var v interface{ PeerProtocolError() bool }
	if errors.As(err, &v) {
		return v.PeerProtocolError() // (false: damage on the way as likely)
	}
	return errors.Is(err, ErrProtocol)
}

// netErrno reports whether err's cause is a network's (a reset, a
// broken pipe, a timeout): a connection's, even wrapped as a file's.
func netErrno(err error) bool {
	for _, e := range []error{syscall.EPIPE, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.ECONNREFUSED, syscall.ETIMEDOUT, syscall.ENETUNREACH, syscall.EHOSTUNREACH, syscall.ENETDOWN, syscall.ENOTCONN, syscall.ESHUTDOWN} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// controlLostWithin reports whether the control link's reader has met
// its end, or meets it within d.
func (s *Session) controlLostWithin(ctx context.Context, d time.Duration) bool {
	if s.c == nil {
		return false
	}
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-s.c.lost:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
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
	if s.dataFailed() {
		return true
	}
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-df.Failed():
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}
