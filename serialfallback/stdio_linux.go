package serialfallback

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// stdioPort reads one descriptor and writes another that it does not own
// (normally 0 and 1). It leaves their file status flags alone, because
// stdin, stdout and stderr usually share one open file description with
// the login shell: setting O_NONBLOCK on them would leak into the shell
// and into every other writer of stderr. Reads instead poll the
// descriptor together with a wake-up pipe that Close writes to.
type stdioPort struct {
	in, out      int
	wakeR, wakeW int

	mu      sync.RWMutex // held shared while polling; Close takes it to wait them out
	closed  atomic.Bool
	restore []func() // undo raw mode, last first
}

// flushInput discards what a terminal on stdin holds; a pipe's bytes
// are not the line's to drop.
func (s *stdioPort) flushInput() error {
	if !term.IsTerminal(s.in) {
		return nil
	}
	return unix.IoctlSetInt(s.in, unix.TCFLSH, unix.TCIFLUSH)
}

func openStdio(in, out int, fl flow) (port, error) {
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, fmt.Errorf("serialfallback: stdio: wake-up pipe: %w", err)
	}
	s := &stdioPort{in: in, out: out, wakeR: pipe[0], wakeW: pipe[1]}
	for _, fd := range []int{in, out} {
		if !term.IsTerminal(fd) {
			continue
		}
		st, err := term.MakeRaw(fd)
		if err == nil {
			fd := fd
			s.restore = append(s.restore, func() { term.Restore(fd, st) })
			err = setTTYFlow(fd, fl)
		}
		if err != nil {
			s.undo()
			return nil, fmt.Errorf("serialfallback: stdio: raw mode on fd %d: %w", fd, err)
		}
	}
	return s, nil
}

func (s *stdioPort) undo() {
	for i := len(s.restore) - 1; i >= 0; i-- {
		s.restore[i]()
	}
	s.restore = nil
	unix.Close(s.wakeR)
	unix.Close(s.wakeW)
}

// wait polls fd for events (POLLIN or POLLOUT) or a Close. It reports
// false when the port was closed.
func (s *stdioPort) wait(fd int, events int16) (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return false, nil
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: events}, {Fd: int32(s.wakeR), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, err
		}
		if fds[1].Revents != 0 {
			return false, nil
		}
		if fds[0].Revents&unix.POLLNVAL != 0 {
			return false, unix.EBADF
		}
		if fds[0].Revents != 0 {
			return true, nil
		}
	}
}

func (s *stdioPort) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		ok, err := s.wait(s.in, unix.POLLIN)
		if err != nil {
			return 0, fmt.Errorf("serialfallback: stdio read: %w", err)
		}
		if !ok {
			return 0, ErrClosed
		}
		n, err := unix.Read(s.in, p)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err == unix.EIO:
			return 0, io.EOF // terminal hung up
		case err != nil:
			return 0, fmt.Errorf("serialfallback: stdio read: %w", err)
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write blocks until all of p is written. A write(2) blocked on a
// flow-stopped terminal is not interrupted by Close.
func (s *stdioPort) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		if s.closed.Load() {
			return done, ErrClosed
		}
		n, err := unix.Write(s.out, p[done:])
		if n > 0 {
			done += n
		}
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN: // stdout was non-blocking already
			ok, werr := s.wait(s.out, unix.POLLOUT)
			if werr != nil {
				return done, fmt.Errorf("serialfallback: stdio write: %w", werr)
			}
			if !ok {
				return done, ErrClosed
			}
		case err != nil:
			return done, fmt.Errorf("serialfallback: stdio write: %w", err)
		}
	}
	return done, nil
}

func (s *stdioPort) Drain() error {
	if !term.IsTerminal(s.out) {
		return nil
	}
	return tcdrain(s.out)
}

// Close wakes pending Reads, waits for them to return, restores the
// terminal modes and releases the pipe. Stdin and stdout stay open.
func (s *stdioPort) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	unix.Write(s.wakeW, []byte{0})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.undo()
	return nil
}
