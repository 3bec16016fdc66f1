// Reading a local file to send: LocalFile, a bare descriptor.

package filestore

import (
	"io"
	"io/fs"
	"os"
	"path"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"kerf/internal/holes"
	"kerf/kermit"
)

// OpenLocal opens a local file for reading, as os.Open does but as a
// bare descriptor (LocalFile): no attempt to register a regular file
// with the network poller (a failing epoll_ctl and three fcntl per
// file), and no os.File (its fcntl, cleanup and allocations), which
// show when a client sends thousands of small files.
//
// Only a regular file opens: one swapped for a named pipe since it was
// listed would block the open for ever (O_NONBLOCK, harmless on a
// regular file, keeps it from that), and a directory would read as
// garbage.
func OpenLocal(name string) (*LocalFile, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f := &LocalFile{fd: fd, name: name}
	if err := regularStat(fd, &f.opened); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f, nil
}

// errNotRegular is what opening a file for reading finds in its place
// when it is not a regular file.
type errNotRegular struct{ kind string }

func (e errNotRegular) Error() string { return "no longer a regular file (now " + e.kind + ")" }

// mustBeRegular fails unless fd is a regular file.
func mustBeRegular(fd int) error {
	var st unix.Stat_t
	return regularStat(fd, &st)
}

// regularStat is mustBeRegular, keeping the fstat in st.
func regularStat(fd int, st *unix.Stat_t) error {
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, st) }); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errNotRegular{EntryKind(statInfo{st: *st}.Mode())}
	}
	return nil
}

// LocalFile is a local file open for reading (OpenLocal). Its methods
// may be called concurrently (the data path re-reads blocks for resend
// requests); once it is closed they fail, as an os.File's do, and never
// reach a descriptor that another open has reused since.
type LocalFile struct {
	mu     sync.RWMutex // held shared by every use of fd, exclusive by Close
	fd     int
	name   string
	file   *os.File // made on the first File call; then it owns fd
	closed bool
	opened unix.Stat_t // the fstat OpenLocal checked it with (OpenedStat)
}

func (f *LocalFile) pathErr(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

// use holds the descriptor open for one call, or says it is closed.
func (f *LocalFile) use(op string) (release func(), err error) {
	f.mu.RLock()
	if f.closed {
		f.mu.RUnlock()
		return nil, f.pathErr(op, os.ErrClosed)
	}
	return f.mu.RUnlock, nil
}

// Read reads from the file's offset, as os.File.Read does.
func (f *LocalFile) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	release, err := f.use("read")
	if err != nil {
		return 0, err
	}
	defer release()
	var n int
	err = ignoringEINTR(func() error {
		var err error
		n, err = unix.Read(f.fd, b)
		return err
	})
	if err != nil {
		return max(n, 0), f.pathErr("read", err)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// ReadAt reads len(b) bytes at off, as os.File.ReadAt does: less only
// with an error, io.EOF at the file's end.
func (f *LocalFile) ReadAt(b []byte, off int64) (int, error) {
	release, err := f.use("read")
	if err != nil {
		return 0, err
	}
	defer release()
	n, err := fdReader(f.fd).ReadAt(b, off)
	if err != nil && err != io.EOF {
		err = f.pathErr("read", err)
	}
	return n, err
}

// Seek sets the offset of the next Read.
func (f *LocalFile) Seek(off int64, whence int) (int64, error) {
	release, err := f.use("seek")
	if err != nil {
		return 0, err
	}
	defer release()
	pos, err := unix.Seek(f.fd, off, whence)
	if err != nil {
		return 0, f.pathErr("seek", err)
	}
	return pos, nil
}

// Stat describes the open file (the engine checks that it did not
// change while it was sent).
func (f *LocalFile) Stat() (fs.FileInfo, error) {
	release, err := f.use("stat")
	if err != nil {
		return nil, err
	}
	defer release()
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(f.fd, &st) }); err != nil {
		return nil, f.pathErr("stat", err)
	}
	return statInfo{name: path.Base(f.name), st: st}, nil
}

// OpenedStat returns the file's status as it was opened (OpenLocal's
// own fstat, which found it regular), without asking again: a sender
// compares it with the listing right after the open, one system call a
// file fewer (many small files are a few calls each). Stat asks afresh.
func (f *LocalFile) OpenedStat() fs.FileInfo {
	return statInfo{name: path.Base(f.name), st: f.opened}
}

// CRC32C is the CRC-32C of bytes [off, end) of the file, its holes
// counted without being read (a sender's check of a receiver's partial
// of a sparse image: kermit's crcOfRange).
func (f *LocalFile) CRC32C(off, end int64) (uint32, error) {
	release, err := f.use("read")
	if err != nil {
		return 0, err
	}
	defer release()
	return holes.CRC32C(f.fd, fdReader(f.fd), off, end)
}

// fdReader reads a descriptor its caller keeps open (with pread), taking
// no lock of its own: LocalFile.ReadAt under its lock, and CRC32C, which
// holds the lock already (a second read lock could wait behind a Close).
type fdReader int

func (fd fdReader) ReadAt(b []byte, off int64) (int, error) {
	total := 0
	for len(b) > 0 {
		var n int
		err := ignoringEINTR(func() error {
			var err error
			n, err = unix.Pread(int(fd), b, off)
			return err
		})
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, io.EOF
		}
		total += n
		b, off = b[n:], off+int64(n)
	}
	return total, nil
}

// MayHaveHoles reports, from the open's fstat, whether the file has
// fewer blocks allocated than its size needs (datachan.HoleHinter: only
// such a file's blocks are looked at for holes).
func (f *LocalFile) MayHaveHoles() (holes, known bool) {
	return f.opened.Blocks*512 < f.opened.Size, true
}

// File returns the file as an *os.File, for sendfile(2)
// (datachan.FileSource); from then on Close closes that.
func (f *LocalFile) File() *os.File {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.file == nil && !f.closed {
		f.file = os.NewFile(uintptr(f.fd), f.name)
	}
	return f.file
}

// Close closes the file once.
func (f *LocalFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return f.pathErr("close", os.ErrClosed)
	}
	f.closed = true
	if f.file != nil {
		return f.file.Close()
	}
	if err := unix.Close(f.fd); err != nil {
		return f.pathErr("close", err)
	}
	return nil
}

// statInfo is an fs.FileInfo from fstat.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string { return s.name }
func (s statInfo) Size() int64  { return s.st.Size }
func (s statInfo) ModTime() time.Time {
	return time.Unix(s.st.Mtim.Unix())
}
func (s statInfo) IsDir() bool { return s.Mode().IsDir() }

// ChangeTime is the file's ctime (kermit.ChangeTimeOf).
func (s statInfo) ChangeTime() time.Time { return time.Unix(s.st.Ctim.Unix()) }
func (s statInfo) Sys() any              { return &s.st }

// Status is the file's links, mode and owner (kermit.StatusOf).
func (s statInfo) Status() kermit.FileStatus {
	return kermit.FileStatus{Dev: uint64(s.st.Dev), Ino: s.st.Ino, Links: uint64(s.st.Nlink), Mode: uint32(s.st.Mode), UID: s.st.Uid, GID: s.st.Gid, Known: true}
}

// Links is the file's link count: 0 once it has been removed while open.
func (s statInfo) Links() uint64 { return uint64(s.st.Nlink) }
func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
