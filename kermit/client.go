package kermit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// Get asks a Kermit server for the files matching spec (GET) and
// receives them into store.
func (s *Session) Get(ctx context.Context, spec string, recursive bool, store Store) error {
	return s.GetWith(ctx, spec, GetOptions{Recursive: recursive}, store)
}

// GetOptions modify a GET.
type GetOptions struct {
	Recursive bool // directories stand for their trees (V packet)
	Resume    bool // recover partial files (REGET, J packet; recursive too)
}

// GetWith is Get with options.
func (s *Session) GetWith(ctx context.Context, spec string, o GetOptions, store Store) error {
	defer s.flush()
	if err := s.initServer(ctx); err != nil {
		return s.abort(err)
	}
	typ := byte('R')
	switch {
	case o.Resume:
		typ = 'J' // REGET; kerf's server also recurses into directories
	case o.Recursive:
		typ = 'V' // C-Kermit's GET /RECURSIVE
	}
	sl, err := s.request(ctx, typ, []byte(spec))
	if err != nil {
		return s.abort(err)
	}
	if sl.ackType != 'S' {
		return s.abort(fmt.Errorf("%w: server answered GET with %q", ErrProtocol, sl.ackType))
	}
	if err := s.takeServerInit(ctx, sl); err != nil {
		return s.abort(err)
	}
	if err := s.recvGroup(ctx, store, nil, true); err != nil {
		return s.abort(err)
	}
	return nil
}

// Generic sends a REMOTE (G) command and returns the server's reply text.
// cmd is the generic command letter (D directory, C cwd, E delete, m
// mkdir, d rmdir, R rename, F finish, L bye, A pwd).
func (s *Session) Generic(ctx context.Context, cmd byte, args ...string) (string, error) {
	defer s.flush()
	if err := s.initServer(ctx); err != nil {
		return "", s.abort(err)
	}
	sl, err := s.request(ctx, 'G', encodeGenericArgs(cmd, args))
	if err != nil {
		return "", s.abort(err)
	}
	if sl.ackType == 'Y' {
		return s.decodeString(sl.ackData)
	}
	if err := s.takeServerInit(ctx, sl); err != nil {
		return "", s.abort(err)
	}
	var out bytes.Buffer
	if err := s.recvGroup(ctx, nil, &out, true); err != nil {
		return "", s.abort(err)
	}
	return out.String(), nil
}

// initServer does the optional I exchange so the command that follows
// uses the agreed block check and packet length. A server that does not
// know I answers with E; then the defaults stay.
func (s *Session) initServer(ctx context.Context) error {
	s.resetNegotiation()
	s.initRefusal = nil
	err := s.sendInit(ctx, 'I')
	var pe *PeerError
	if errors.As(err, &pe) {
		s.resetNegotiation()
		s.initRefusal = pe
		return nil
	}
	if err != nil {
		return err
	}
	// The command restarts at the I's sequence number.
	win := s.neg.window
	s.sw.reset(win)
	return nil
}

// request sends R or G and waits for its answer: an ACK, or an S that
// opens the transaction carrying the reply.
func (s *Session) request(ctx context.Context, typ byte, arg []byte) (*slot, error) {
	data, err := s.encodeField(arg)
	if err != nil {
		return nil, err
	}
	sl, err := s.queueReply(ctx, typ, data, "YS")
	if err != nil {
		return nil, err
	}
	if err := s.await(ctx, sl); err != nil {
		var le *LinkError
		if s.initRefusal != nil && errors.As(err, &le) {
			// Not a server that does not know I: one that refused us
			// (a kerf server that requires TLS) and hung up. Its words
			// say why; the closed link does not. Still a LinkError, not
			// a PeerError: the session is over, not just this command.
			return nil, fmt.Errorf("kermit: the server refused the session (%q) and closed the connection: %w", s.initRefusal.Msg, err)
		}
		return nil, err
	}
	return sl, nil
}

func (s *Session) queueReply(ctx context.Context, typ byte, data []byte, replies string) (*slot, error) {
	sl, err := s.queue(ctx, typ, data, 0)
	if err != nil {
		return nil, err
	}
	sl.replies = replies
	return sl, nil
}

// takeServerInit answers the server's S that arrived in place of an ACK.
func (s *Session) takeServerInit(ctx context.Context, sl *slot) error {
	s.rw.reset(1, 0)
	s.rw.started = true
	p := sl.reply
	if err := s.answerInit(ctx, p, false); err != nil {
		return err
	}
	s.rw.lo = (p.Seq + 1) % 64
	return nil
}

// Finish tells a server to exit server mode (FINISH); Bye also logs out.
func (s *Session) Finish(ctx context.Context) error {
	_, err := s.Generic(ctx, 'F')
	return err
}
