//go:build !linux

package datachan

import (
	"errors"
	"net"
	"syscall"
)

// Zero-copy sending is Linux only (sendfile(2) on TCP); elsewhere every
// block is read into a buffer and written.

const zeroCopyMin = 64 << 10

func rawSocket(net.Conn) syscall.RawConn { return nil }

type sendfileState struct{}

func (s *stream) sendfileFrame(f *frame) error {
	return errors.New("datachan: zero-copy sending is not supported here")
}
