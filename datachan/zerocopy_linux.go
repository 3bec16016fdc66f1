//go:build linux

package datachan

import (
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Zero-copy sending. On a plaintext TCP connection a large block of a
// file goes out with sendfile(2): the kernel hands the page-cache pages
// to the socket (on loopback the receiver copies straight out of them)
// instead of copying a user buffer into socket memory. The sender still
// reads each block, for its CRC-32C, but into one buffer that stays in
// cache. (Taking the CRC from a mapping of the file instead cost as
// much CPU: page-table work and a CRC over cold memory.) See
// docs/benchmarks.md. TLS encrypts in user space, so it keeps the
// copying path.

// zeroCopyMin is the smallest block sent with sendfile: below it the
// copy costs less than the extra syscall.
const zeroCopyMin = 64 << 10

// rawSocket returns c's raw socket if blocks may be sent on it with
// sendfile: only a bare TCP connection qualifies. A wrapper (TLS, a test
// proxy) may transform what is written, so it never does.
func rawSocket(c net.Conn) syscall.RawConn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// zeroPad is written in place of bytes a file lost between its read and
// its sendfile, so that the stream keeps its framing; the receiver sees
// a bad payload and asks again, and the re-read comes short: that block
// goes again padded with zeros under its own check (resendLoop), and
// either the engine, seeing the file changed, discards it, or the
// receiver finds the whole file's check wrong and refuses it.
var zeroPad [64 << 10]byte

// sendfileState is a stream's frame in progress with sendfile. It lives
// in the stream, and its socket callback is made once, so that a block
// allocates nothing (a closure over locals would move them all to the
// heap). The callback may run several times, while the socket is full;
// it resumes from here.
type sendfileState struct {
	job       *sendJob
	infd      int
	hdr       []byte // header bytes not yet written
	off, left int64  // where the rest of the payload is in the file, and its length
	copying   bool   // cp sends the rest: sendfile refused the file or ran out of it
	cp        copier
	err       error
	step      func(outfd uintptr) bool // s.sendfileStep
}

// sendfileFrame writes f's header and then its payload with sendfile
// from f.src (or, for a file sendfile refuses, with pread and write).
// The caller holds s.wmu.
func (s *stream) sendfileFrame(f *frame) error {
	src, err := f.src.SyscallConn()
	if err != nil {
		return err
	}
	st := &s.sf
	if st.step == nil {
		st.step = s.sendfileStep
	}
	st.job, st.hdr, st.off, st.left, st.err = f.job, f.hdr(), f.srcOff, int64(f.n), nil
	st.copying = f.job != nil && f.job.noSendfile.Load()
	st.cp.reset(false)
	// Control keeps the file's descriptor open (and its number ours)
	// until sendfile is done, even if the sender closes the file.
	cerr := src.Control(func(infd uintptr) {
		st.infd = int(infd)
		if perr := s.raw.Write(st.step); st.err == nil {
			st.err = perr
		}
	})
	werr, copying := st.err, st.copying
	st.job, st.hdr, st.err = nil, nil, nil
	if cerr != nil {
		if f.job != nil && f.job.abandoned.Load() {
			// Nothing was written: the file's SendFile gave up and the
			// caller may have closed the file.
			return errNotSent
		}
		return fmt.Errorf("sendfile at offset %d: %w", f.srcOff, cerr)
	}
	if werr == nil && !copying {
		s.p.stats.zeroCopyBlocks.Add(1)
	}
	return werr
}

// sendfileStep is the socket callback of sendfileFrame: it sends what
// is left of s.sf's frame, and returns false when the socket is full.
func (s *stream) sendfileStep(outfd uintptr) bool {
	st := &s.sf
	// MSG_MORE: the header waits for the payload, so that the two go
	// in the same segments despite TCP_NODELAY.
	if blocked, err := sendAll(int(outfd), &st.hdr, unix.MSG_MORE); err != nil || blocked {
		st.err = err
		return !blocked
	}
	for st.left > 0 && !st.copying {
		n, err := sendfile(int(outfd), st.infd, &st.off, int(min(st.left, 1<<30)))
		if n > 0 {
			st.left -= int64(n)
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return false
		case err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP:
			// This file cannot be spliced (some file systems and
			// special files): copy the rest instead, and the file's
			// later blocks from the start.
			st.copying = true
			if st.job != nil {
				st.job.noSendfile.Store(true)
			}
		case err != nil:
			st.err = err
			return true
		case n == 0:
			// The file ended early: the copier pads, with no read
			// (sendfile found the end already).
			st.copying = true
			st.cp.reset(true)
		}
	}
	if !st.copying {
		return true
	}
	blocked, err := st.cp.copy(int(outfd), st.infd, &st.off, &st.left)
	st.err = err
	return !blocked
}

// sendfile is unix.Sendfile; tests replace it to refuse.
var sendfile = unix.Sendfile

// sendAll writes *b to the socket fd, consuming what it wrote, and
// reports blocked when the socket is full (as a RawConn.Write callback
// then returns false, to be called again when it drains).
func sendAll(fd int, b *[]byte, flags int) (blocked bool, err error) {
	for len(*b) > 0 {
		n, err := unix.SendmsgN(fd, *b, nil, nil, flags)
		if n > 0 {
			*b = (*b)[n:]
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return true, nil
		case err != nil:
			return false, err
		}
	}
	return false, nil
}

// copier sends the rest of a frame with pread and write, for a file
// sendfile refuses, and zeros in place of what a shrunk file no longer
// has.
type copier struct {
	buf   []byte // for pread; made on first use, and kept
	chunk []byte // read (or zeros), not yet written
	eof   bool   // the file ended: the rest is zeros
}

// reset readies c for a new frame; eof: the file has ended already.
func (c *copier) reset(eof bool) { c.chunk, c.eof = nil, eof }

// copy sends the frame's remaining left bytes, from the file at *off,
// and reports blocked as sendAll does.
func (c *copier) copy(outfd, infd int, off, left *int64) (blocked bool, err error) {
	for *left > 0 || len(c.chunk) > 0 {
		if len(c.chunk) == 0 {
			n := 0
			if !c.eof {
				if c.buf == nil {
					c.buf = make([]byte, 64<<10)
				}
				n, err = unix.Pread(infd, c.buf[:min(*left, int64(len(c.buf)))], *off)
				if err == unix.EINTR {
					continue
				}
				if err != nil {
					return false, err
				}
				c.eof = n == 0
			}
			if c.eof {
				// zeroPad is only ever read: one for every stream.
				c.chunk = zeroPad[:min(*left, int64(len(zeroPad)))]
			} else {
				c.chunk = c.buf[:n]
			}
			*off += int64(len(c.chunk))
			*left -= int64(len(c.chunk))
		}
		if blocked, err := sendAll(outfd, &c.chunk, 0); err != nil || blocked {
			return blocked, err
		}
	}
	return false, nil
}
