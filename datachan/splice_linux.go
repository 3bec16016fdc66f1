package datachan

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"syscall"

	"golang.org/x/sys/unix"

	"kerf/framing"
)

// Zero-copy receive of large blocks on plain TCP (Linux).
//
// A block read with read(2) is copied twice on the receiver: from the
// socket into the frame, and from the frame into the file. With splice(2)
// the payload goes socket -> pipe -> file with one copy (into the page
// cache), and the check reads it back from the page cache through a
// read-only mapping, which copies nothing. On loopback onto tmpfs the
// socket copy was a third of the receiving side's CPU.
//
// It applies when the connection is a bare *net.TCPConn (not TLS), the
// block is large, no bytes of it sit in the stream's read buffer, and the
// block's file is expected with a destination that is a plain file (see
// FileBacked). Everything else takes the read path.

// FileBacked is implemented by destinations (io.WriterAt given to
// Expect) that write straight into an *os.File at the same offsets, so
// that the data path may write to the file itself; nil means not. A
// destination that also has Spliced(n) is told of the bytes written so.
type FileBacked interface {
	BackingFile() *os.File
}

// spliceMin is the smallest payload worth a splice.
const spliceMin = 64 << 10

// splicer is a stream's pipe and raw socket for splicing.
type splicer struct {
	rc     syscall.RawConn
	pr, pw int // pipe ends
	pipeSz int
}

// newSplicer prepares splicing for c, or returns nil when c is not a
// bare TCP connection or the pipe cannot be made.
func newSplicer(c net.Conn) *splicer {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil
	}
	sz, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, 1<<20)
	if err != nil {
		// The default pipe (64 KiB) works too, in more steps.
		sz = 64 << 10
	}
	return &splicer{rc: rc, pr: p[0], pw: p[1], pipeSz: sz}
}

func (sp *splicer) close() {
	if sp != nil {
		unix.Close(sp.pr)
		unix.Close(sp.pw)
	}
}

// errSpliceSocket marks a failure on the socket side (the stream is lost).
var errSpliceSocket = errors.New("splice from socket")

// moveToFile moves exactly n bytes from the socket to f at off.
func (sp *splicer) moveToFile(f *os.File, off int64, n int) error {
	frc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	for n > 0 {
		want := min(n, sp.pipeSz)
		// Fill the pipe from the socket, waiting for data through the
		// network poller.
		var got int
		var serr error
		err := sp.rc.Read(func(fd uintptr) bool {
			var g int64
			g, serr = unix.Splice(int(fd), nil, sp.pw, nil, want, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			got = int(g)
			return serr != unix.EAGAIN
		})
		if err == nil {
			err = serr
		}
		if err == nil && got == 0 {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return fmt.Errorf("%w: %w", errSpliceSocket, err)
		}
		// Drain the pipe into the file.
		for left := got; left > 0; {
			var m int
			var werr error
			if err := frc.Control(func(fd uintptr) {
				var g int64
				g, werr = unix.Splice(sp.pr, nil, int(fd), &off, left, unix.SPLICE_F_MOVE)
				m = int(g)
			}); err != nil {
				return err
			}
			if werr != nil {
				return werr
			}
			if m == 0 {
				return io.ErrShortWrite
			}
			left -= m
		}
		n -= got
	}
	return nil
}

// fileCRC returns the CRC-32C of f's bytes [off, off+n) read through a
// read-only mapping. A fault (the file shrank under us) is an error, not
// a crash.
func fileCRC(f *os.File, off int64, n int) (crc uint32, err error) {
	page := int64(os.Getpagesize())
	start := off &^ (page - 1)
	delta := int(off - start)
	frc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var m []byte
	var merr error
	if err := frc.Control(func(fd uintptr) {
		m, merr = unix.Mmap(int(fd), start, delta+n, unix.PROT_READ, unix.MAP_SHARED)
	}); err != nil {
		return 0, err
	}
	if merr != nil {
		return 0, merr
	}
	defer unix.Munmap(m)
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("datachan: reading back %s at %d: %v", f.Name(), off, r)
		}
	}()
	return framing.CRC32C(m[delta : delta+n]), nil
}

// trySplice receives the payload of block h straight into its file when
// it can. handled false means nothing was read and the caller reads the
// block as usual.
func (s *stream) trySplice(h framing.BlockHeader) (handled bool, err error) {
	if s.splice == nil || h.Length < spliceMin || s.rpos != s.rend {
		return false, nil
	}
	p := s.p
	p.mu.Lock()
	file := p.files[h.FileID]
	var fb FileBacked
	if file != nil && file.err == nil && file.dst != nil {
		fb, _ = file.dst.(FileBacked)
	}
	var f *os.File
	if fb != nil {
		f = fb.BackingFile()
	}
	if f == nil || !file.got.free(h.Offset, h.Offset+uint64(h.Length)) ||
		h.Offset < file.off || h.Offset+uint64(h.Length) > file.end {
		// Not expected yet, a duplicate or out of range: the read path
		// parks, drops or reports it.
		p.mu.Unlock()
		return false, nil
	}
	// Bytes of a block not yet admitted are seen by no one: the file is
	// temporary until every block is verified, and Wait returns only
	// then. The range is free, and a sender sends a block again only
	// when asked (after a bad copy), so no verified bytes are
	// overwritten here.
	p.mu.Unlock()
	if err := s.splice.moveToFile(f, int64(h.Offset), int(h.Length)); err != nil {
		if errors.Is(err, errSpliceSocket) {
			return true, s.lost(err)
		}
		// The file side failed: the block's bytes may be half in the
		// pipe, so the stream cannot go on.
		p.failFile(file, fmt.Errorf("datachan: writing file %d at %d: %w", file.id, h.Offset, err))
		return true, fmt.Errorf("datachan: stream %d: splicing into file %d: %w", s.idx, file.id, err)
	}
	crc, err := fileCRC(f, int64(h.Offset), int(h.Length))
	if err != nil || crc != h.PayloadCRC {
		if err != nil {
			p.failFile(file, err)
			return true, nil
		}
		p.stats.badBlocks.Add(1)
		return true, s.requestResend(h)
	}
	p.mu.Lock()
	ok, aerr := p.admitLocked(file, h)
	if aerr == nil && ok && file.err == nil {
		p.stats.spliced.Add(1)
		file.written += uint64(h.Length)
		if file.complete() {
			close(file.done)
		}
	}
	dst := file.dst
	p.mu.Unlock()
	if aerr != nil {
		return true, fmt.Errorf("%w: stream %d: %w", ErrProtocol, s.idx, aerr)
	}
	if sp, ok := dst.(interface{ Spliced(int) }); ok {
		sp.Spliced(int(h.Length))
	}
	return true, nil
}
