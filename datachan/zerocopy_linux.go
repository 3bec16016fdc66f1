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
// a bad payload and asks again, and the re-read reports the short file.
var zeroPad [64 << 10]byte

// sendfileFrame writes f's header and then its payload with sendfile
// from f.src (or, for a file sendfile refuses, with pread and write).
// The caller holds s.wmu.
func (s *stream) sendfileFrame(f *frame) error {
	src, err := f.src.SyscallConn()
	if err != nil {
		return err
	}
	hdr, off, left := f.hdr(), f.srcOff, int64(f.n)
	var werr error
	var cp *copier // set once sendfile has refused this file
	if f.job != nil && f.job.noSendfile.Load() {
		cp = &copier{buf: s.copyBuf}
	}
	// Control keeps the file's descriptor open (and its number ours)
	// until sendfile is done, even if the sender closes the file.
	cerr := src.Control(func(infd uintptr) {
		perr := s.raw.Write(func(outfd uintptr) bool {
			for len(hdr) > 0 {
				// MSG_MORE: the header waits for the payload, so that
				// the two go in the same segments despite TCP_NODELAY.
				n, err := unix.SendmsgN(int(outfd), hdr, nil, nil, unix.MSG_MORE)
				switch {
				case err == unix.EINTR:
					continue
				case err == unix.EAGAIN:
					return false
				case err != nil:
					werr = err
					return true
				}
				hdr = hdr[n:]
			}
			for left > 0 && cp == nil {
				n, err := sendfile(int(outfd), int(infd), &off, int(min(left, 1<<30)))
				if n > 0 {
					left -= int64(n)
				}
				switch {
				case err == unix.EINTR:
					continue
				case err == unix.EAGAIN:
					return false
				case err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP:
					// This file cannot be spliced (some file systems
					// and special files): copy the rest instead, and
					// the file's later blocks from the start.
					cp = &copier{buf: s.copyBuf}
					if f.job != nil {
						f.job.noSendfile.Store(true)
					}
				case err != nil:
					werr = err
					return true
				case n == 0:
					return s.padFrame(outfd, &left, &werr)
				}
			}
			if cp != nil {
				return cp.copy(s, outfd, infd, &off, &left, &werr)
			}
			return true
		})
		if werr == nil {
			werr = perr
		}
	})
	if cp != nil {
		s.copyBuf = cp.buf
	}
	if cerr != nil {
		if f.job != nil && f.job.abandoned.Load() {
			// Nothing was written: the file's SendFile gave up and the
			// caller may have closed the file.
			return errNotSent
		}
		return fmt.Errorf("sendfile at offset %d: %w", f.srcOff, cerr)
	}
	if werr == nil && cp == nil {
		s.p.stats.zeroCopyBlocks.Add(1)
	}
	return werr
}

// sendfile is unix.Sendfile; tests replace it to refuse.
var sendfile = unix.Sendfile

// copier sends the rest of a frame with pread and write, for a file
// sendfile refuses.
type copier struct {
	buf   []byte
	chunk []byte // read, not yet written
}

// copy reports, as a RawConn.Write callback does, whether it is done.
func (c *copier) copy(s *stream, outfd, infd uintptr, off, left *int64, werr *error) bool {
	if c.buf == nil {
		c.buf = make([]byte, 64<<10)
	}
	for *left > 0 || len(c.chunk) > 0 {
		if len(c.chunk) == 0 {
			n, err := unix.Pread(int(infd), c.buf[:min(*left, int64(len(c.buf)))], *off)
			switch {
			case err == unix.EINTR:
				continue
			case err != nil:
				*werr = err
				return true
			case n == 0:
				return s.padFrame(outfd, left, werr)
			}
			c.chunk = c.buf[:n]
			*off += int64(n)
			*left -= int64(n)
		}
		n, err := unix.Write(int(outfd), c.chunk)
		if n > 0 {
			c.chunk = c.chunk[n:]
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return false
		case err != nil:
			*werr = err
			return true
		}
	}
	return true
}

// padFrame fills the rest of a frame whose file ended early with zeros.
// It reports, as a RawConn.Write callback does, whether it is done.
func (s *stream) padFrame(outfd uintptr, left *int64, werr *error) bool {
	for *left > 0 {
		n, err := unix.Write(int(outfd), zeroPad[:min(*left, int64(len(zeroPad)))])
		if n > 0 {
			*left -= int64(n)
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return false
		case err != nil:
			*werr = err
			return true
		}
	}
	return true
}
