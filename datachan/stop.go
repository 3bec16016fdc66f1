package datachan

import (
	"fmt"

	"kerf/framing"
)

// WithStops says the peer takes and sends stop requests
// (framing.ResendFlagStop): agreed in the control connection's
// extension field (";S"). A Path so made tells the sender of a file it
// could not write (its disk full) to send nothing more of it, and stops
// sending a file of its own when told so; without it a stop request is
// a protocol error. Before, a receiver whose disk filled a few MB into
// a 1 GiB file took the whole rest of it across the link, dropped (QA
// ar F8).
func WithStops(on bool) Option {
	return func(c *config) { c.stops = on }
}

// StoppedError is SendFile's error for a file its receiver stopped
// (WithStops): it failed the file (a write failed) and said so on the
// data path; the rest of the file was not sent. The engine ends the
// file with a Z that discards it, whose answer says the receiver's
// reason. The Path goes on.
type StoppedError struct{ ID uint32 }

func (e *StoppedError) Error() string {
	return fmt.Sprintf("datachan: the receiver stopped file %d (it could not store it)", e.ID)
}

// StoppedByPeer says the file, not the Path, ended (see kermit).
func (e *StoppedError) StoppedByPeer() bool { return true }

// FileErr returns why file id, expected and not yet waited for or
// abandoned, failed (a WriteError), or nil: a receiving engine told by
// a Z that discards the file (its sender was stopped, WithStops) says
// this reason, not the sender's.
func (p *Path) FileErr(id uint32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := p.files[id]; f != nil {
		return f.err
	}
	return nil
}

// requestStop asks the peer, on the first connection, to send nothing
// more of file id. It never waits; with no stops agreed it does nothing.
// Called with p.mu held (from writeLocked).
func (p *Path) requestStop(id uint32) {
	if !p.cfg.stops || len(p.streams) == 0 {
		return
	}
	s := p.streams[0]
	s.ctlMu.Lock()
	if len(s.ctl) >= maxDeferred {
		// Resend requests fill it: the file's Z says it failed all the
		// same, once the rest has crossed.
		s.ctlMu.Unlock()
		return
	}
	s.ctl = append(s.ctl, framing.ResendRequest{FileID: id, Stop: true})
	s.ctlMu.Unlock()
	select {
	case s.ctlSignal <- struct{}{}:
	default:
	}
}

// stop is the peer's stop request for file id, read by s: its blocks not
// yet read are dropped, its resends too, and its SendFiles return a
// StoppedError. One for a file released already (it crossed whole before
// the request came) is nothing to do.
func (s *stream) stop(id uint32) error {
	p := s.p
	if !p.cfg.stops {
		return s.protocolError("stop request for file %d, where none was agreed", id)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	src := p.sources[id]
	if src == nil {
		if id > p.maxSource {
			return s.protocolError("stop request for file %d, which is not being sent", id)
		}
		return nil
	}
	src.stopped.Store(true)
	return nil
}
