package kermit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"
)

// failingPath is a data path that fails after a delay (never: negative).
type failingPath struct {
	DataPath
	failed chan struct{}
}

func newFailingPath(after time.Duration) *failingPath {
	p := &failingPath{failed: make(chan struct{})}
	switch {
	case after == 0:
		close(p.failed)
	case after > 0:
		time.AfterFunc(after, func() { close(p.failed) })
	}
	return p
}

func (p *failingPath) Failed() <-chan struct{} { return p.failed }
func (p *failingPath) LocalFailure() error     { return nil }

// peerBreach is a data path's protocol error (as datachan.ErrProtocol).
type peerBreach struct{}

func (peerBreach) Error() string           { return "datachan: protocol error: block outside the file" }
func (peerBreach) PeerProtocolError() bool { return true }

// damagedHeader is a data path's protocol error that damage explains.
type damagedHeader struct{}

func (damagedHeader) Error() string           { return "datachan: protocol error: header check" }
func (damagedHeader) PeerProtocolError() bool { return false }

// A session is lost (Reconnect dials a successor) when its link or data
// path broke, even where the peer's E came before this side saw its
// data connection close; not for a group with files failed, a cancel, a
// refused GET, or an E from a peer whose session lives on.
func TestLostBy(t *testing.T) {
	peer := fmt.Errorf("%w (%v)", &PeerError{Msg: "datachan: data connection lost"}, errors.New("x"))
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		what string
		ctx  context.Context
		err  error
		path time.Duration // the data path fails after this (-1: never)
		lost bool
		// controlGone: the control link's reader has met its end
		controlGone bool
	}{
		{"no error", nil, nil, -1, false, false},
		{"files failed", nil, &GroupError{Failed: []string{"a"}}, -1, false, false},
		{"canceled group", nil, fmt.Errorf("x: %w", ErrCanceled), -1, false, false},
		{"interrupted", canceled, errors.New("read: connection reset"), 0, false, false},
		{"refused GET", nil, &RefusedGetError{&PeerError{Msg: "no such file"}}, -1, false, false},
		{"link reset", nil, &LinkError{Op: "reading", Err: errors.New("connection reset by peer")}, -1, true, false},
		{"E, data path failed", nil, peer, 0, true, false},
		{"E, data path fails just after", nil, peer, 100 * time.Millisecond, true, false},
		{"E, data path well (disk full)", nil, &PeerError{Msg: "disk full"}, -1, false, false},
		// This side's disk refused naming a batch (QA aj): not a loss;
		// a serial line's read error is.
		{"local disk full at naming", nil, fmt.Errorf("kermit: filestore: completing d/f: %w", &os.LinkError{Op: "linkat", Old: "(unnamed file)", New: "d/f", Err: syscall.EDQUOT}), -1, false, false},
		{"local write failed", nil, fmt.Errorf("kermit: %w", &fs.PathError{Op: "write", Path: ".f.kerf-part", Err: syscall.ENOSPC}), -1, false, false},
		{"serial line read error", nil, &LinkError{Op: "reading", Err: &fs.PathError{Op: "read", Path: "/dev/ttyUSB0", Err: syscall.EIO}}, -1, true, false},
		{"a connection's error seen as a file's", nil, fmt.Errorf("kermit: %w", &fs.PathError{Op: "write", Path: "conn", Err: syscall.EPIPE}), -1, true, false},
		// A server stopping, before any data path (QA af).
		{"E, the server shutting down", nil, fmt.Errorf("kermit: send-init: %w", &PeerError{Msg: ShuttingDown}), -1, true, false},
		{"name too long for a packet", nil, fmt.Errorf("kermit: %w (10001 bytes)", ErrFieldTooLong), -1, false, false},
		{"data not the length announced", nil, fmt.Errorf("kermit: big.txt: received 16016 bytes, sender announced 16: %w", errLengthMismatch), -1, false, false},
		// The peer broke the protocol (QA aq): dialled again, it does again.
		{"peer's bad attribute reply", nil, fmt.Errorf("kermit: %w: attribute reply: bad", ErrProtocol), -1, false, false},
		{"peer's bad block", nil, fmt.Errorf("kermit: data of a: %w", peerBreach{}), 0, false, false},
		{"damaged block header", nil, fmt.Errorf("kermit: data of a: %w", damagedHeader{}), 0, true, false},
		{"streaming peer silent", nil, fmt.Errorf("%w: %w", ErrProtocol, errStreamingSilence), -1, true, false},
		{"data port refused", nil, fmt.Errorf("kermit: send-init: %w: %w", errOpeningData, errors.New("connection refused")), -1, false, false},
		// The control connection gone too: the server stopped (QA af).
		{"data and control lost", nil, fmt.Errorf("kermit: send-init: %w: %w", errOpeningData, errors.New("EOF")), -1, true, true},
	} {
		ctx := tc.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		s := &Session{data: newFailingPath(tc.path), c: &pktConn{lost: make(chan struct{})}}
		if tc.controlGone {
			close(s.c.lost)
		}
		if got := s.lostBy(ctx, tc.err); got != tc.lost {
			t.Errorf("%s: lostBy(%v) = %v, want %v", tc.what, tc.err, got, tc.lost)
		}
	}
}
