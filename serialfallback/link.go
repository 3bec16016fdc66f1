package serialfallback

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"kerf/framing"
)

// LinkConfig says which line to open and how.
type LinkConfig struct {
	// Device is the path of a serial device (/dev/ttyS0, /dev/ttyUSB0) or a
	// pseudo-terminal slave (/dev/pts/N, or a symlink to one). Ignored
	// when Stdio is set.
	Device string
	// Speed in bits per second. 0 leaves a pty's speed alone and opens a
	// serial device at 9600. Ignored for Stdio (the remote end's terminal
	// speed is not ours to change) and meaningless on a pty, where bytes
	// move as fast as the other side reads them.
	Speed int
	// Parity is none (or ""), even, odd, mark or space, case-insensitive.
	// Anything but none makes the link 7-bit: see SevenBit.
	Parity string
	// Flow is none (or ""), rtscts or xonxoff, case-insensitive.
	Flow string
	// Stdio uses the process's stdin for reading and stdout for writing,
	// with stdin put into raw mode while the link is open if it is a
	// terminal.
	Stdio bool
	// Command, when not empty, is a shell command whose standard input
	// and output are the line (C-Kermit's SET HOST /COMMAND): a Kermit
	// reached through ssh, say. Its standard error is the process's.
	// Ignored when Stdio is set; Device must then be empty.
	Command string
	// StallTimeout fails a write that makes no progress for this long
	// (plus the time its bytes take at Speed) with ErrStalled, and closes
	// the link: a peer that died, or flow control held off for good,
	// otherwise blocks the sender forever, deaf even to its own timeouts
	// and to Ctrl-C. 0 means DefaultStallTimeout.
	StallTimeout time.Duration
	// FlushInput discards what the line holds when it is opened, as
	// C-Kermit does before its Send-Init: for the side that speaks first
	// (a sender, a client), the leftovers of an earlier transfer, such as
	// the E of a receiver that gave up, would be read as the answer to
	// its first packet. A receiver too (cmd/kerf), as C-Kermit's: a
	// sender that gave up left its S tries and E. A server keeps them: a
	// client's command may be among them, and an old E there ends
	// nothing.
	FlushInput bool
}

// DefaultStallTimeout is LinkConfig.StallTimeout's default.
const DefaultStallTimeout = 30 * time.Second

// ErrStalled is returned by a Write that made no progress for the stall
// timeout (LinkConfig.StallTimeout); the link is closed then.
var ErrStalled = errors.New("serialfallback: line stalled: nothing could be written (peer gone, or flow control holding it off)")

// Parity and flow-control names accepted in LinkConfig.
const (
	ParityNone  = "none"
	ParityEven  = "even"
	ParityOdd   = "odd"
	ParityMark  = "mark"
	ParitySpace = "space"

	FlowNone    = "none"
	FlowRTSCTS  = "rtscts"
	FlowXONXOFF = "xonxoff"
)

// SevenBit reports whether the link carries only 7 data bits, so that the
// engine must ask for 8th-bit prefixing (QBIN) to move binary files. It is
// true for every parity but none.
func (c LinkConfig) SevenBit() bool {
	p, err := parseParity(c.Parity)
	return err == nil && p != framing.ParityNone
}

// Link is an open line.
type Link interface {
	io.ReadWriteCloser
	// Drain blocks until everything written so far has left the local
	// side (tcdrain on a tty; a no-op where there is nothing to wait for).
	Drain() error
	// SetParity switches the software parity (a LinkConfig.Parity name)
	// from the next Read and Write on: the engine follows a peer it finds
	// using parity (kermit.Config.DetectParity).
	SetParity(name string) error
}

var (
	// ErrInvalidConfig is wrapped by every error Open returns for a
	// LinkConfig that cannot be right whatever the device.
	ErrInvalidConfig = errors.New("serialfallback: invalid link configuration")
	// ErrClosed is returned by Read, Write and Drain after Close, including
	// by a Read that was blocked when Close was called. It matches
	// os.ErrClosed too.
	ErrClosed = fmt.Errorf("serialfallback: link closed: %w", os.ErrClosed)
	// ErrLineLocked is wrapped by Open's error when another live process
	// holds the line's UUCP lock file (Unix; elsewhere no lock is taken).
	ErrLineLocked = errors.New("serialfallback: line in use")
)

// Open opens the line described by cfg.
//
// A Device that is a pseudo-terminal slave is opened directly with raw
// termios (speed and flow applied to its termios, where they have no effect
// on throughput); any other Device is opened as a serial port with
// go.bug.st/serial at 8N1 and cfg.Speed, and flow control set on top. Both
// are exclusive of any line discipline processing: no echo, no CR/LF
// mapping, no signals, no XON/XOFF unless asked for.
//
// A Device is first locked (its UUCP lock file, released by Close): one
// another live process holds is refused with an error wrapping
// ErrLineLocked.
//
// With Stdio, reads come from fd 0 and writes go to fd 1; if fd 0 is a
// terminal it is put in raw mode (and xonxoff/rtscts applied to it) until
// Close restores it. Nothing else may read stdin or write stdout while the
// link is open.
func Open(cfg LinkConfig) (Link, error) {
	par, err := parseParity(cfg.Parity)
	if err != nil {
		return nil, err
	}
	fl, err := parseFlow(cfg.Flow)
	if err != nil {
		return nil, err
	}
	if cfg.Speed < 0 {
		return nil, fmt.Errorf("%w: speed %d is negative", ErrInvalidConfig, cfg.Speed)
	}
	var p port
	var lock *lineLock
	switch {
	case cfg.Stdio:
		p, err = openStdio(0, 1, fl)
	case cfg.Command != "" && cfg.Device != "":
		return nil, fmt.Errorf("%w: a device and a command", ErrInvalidConfig)
	case cfg.Command != "":
		if fl != flowNone {
			return nil, fmt.Errorf("%w: flow control on a command's pipes", ErrInvalidConfig)
		}
		p, err = openCommand(cfg.Command)
	case cfg.Device == "":
		return nil, fmt.Errorf("%w: no device, no command and not stdio", ErrInvalidConfig)
	default:
		if lock, err = lockLine(cfg.Device); err != nil {
			return nil, err
		}
		if isPty(cfg.Device) {
			p, err = openTTY(cfg.Device, cfg.Speed, fl)
		} else {
			p, err = openSerial(cfg.Device, cfg.Speed, fl)
		}
	}
	if err != nil {
		lock.release()
		return nil, err
	}
	if f, ok := p.(inputFlusher); ok && cfg.FlushInput {
		if err := f.flushInput(); err != nil {
			p.Close()
			lock.release()
			return nil, fmt.Errorf("serialfallback: discarding old input: %w", err)
		}
	}
	l := newLink(p, par)
	l.lock = lock
	l.stall = cfg.StallTimeout
	if l.stall <= 0 {
		l.stall = DefaultStallTimeout
	}
	l.speed = cfg.Speed
	return l, nil
}

// port is what each kind of line provides; link adds parity and the
// closed-state bookkeeping common to all of them.
type port interface {
	io.ReadWriteCloser
	Drain() error
}

// inputFlusher is implemented by ports that can discard the input the
// line holds (tcflush(TCIFLUSH)).
type inputFlusher interface {
	flushInput() error
}

// deadliner is implemented by ports whose reads can time out.
type deadliner interface {
	SetReadDeadline(t time.Time) error
}

type link struct {
	p       port
	par     atomic.Int32 // a parity; set by SetParity while Read and Write run
	closed  atomic.Bool
	stall   time.Duration // see LinkConfig.StallTimeout; 0: none
	speed   int           // bits per second, 0 unknown
	stalled atomic.Bool
	lock    *lineLock // the line's UUCP lock, released by Close

	wmu  sync.Mutex // guards wbuf
	wbuf []byte     // parity-encoded copy of the caller's bytes
}

func newLink(p port, par framing.Parity) *link {
	l := &link{p: p}
	l.par.Store(int32(par))
	return l
}

func (l *link) parity() framing.Parity { return framing.Parity(l.par.Load()) }

func (l *link) SetParity(name string) error {
	par, err := parseParity(name)
	if err != nil {
		return err
	}
	l.par.Store(int32(par))
	return nil
}

func (l *link) Read(b []byte) (int, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	n, err := l.p.Read(b)
	if l.parity() != framing.ParityNone {
		for i := range b[:n] {
			b[i] &= 0x7f
		}
	}
	if err != nil && l.closed.Load() {
		err = ErrClosed
	}
	return n, err
}

func (l *link) Write(b []byte) (int, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	done := 0
	for done < len(b) {
		// In chunks, each with its own watchdog: a long write at a low
		// speed is slow, not stalled.
		chunk := b[done:min(len(b), done+stallChunk)]
		var t *time.Timer
		if l.stall > 0 {
			t = time.AfterFunc(l.stall+l.lineTime(len(chunk)), func() {
				l.stalled.Store(true)
				l.Close() // wakes the blocked write
			})
		}
		var n int
		var err error
		if par := l.parity(); par == framing.ParityNone {
			n, err = l.p.Write(chunk)
		} else {
			n, err = l.writeParity(chunk, par)
		}
		if t != nil {
			t.Stop()
		}
		done += n
		if err != nil {
			switch {
			case l.stalled.Load():
				err = ErrStalled
			case l.closed.Load():
				err = ErrClosed
			}
			return done, err
		}
	}
	return done, nil
}

// stallChunk is the most a link writes under one watchdog.
const stallChunk = 4096

// lineTime is how long n bytes take on the line at its speed, twice over
// (start and stop bits, and slack); nothing when the speed is unknown.
func (l *link) lineTime(n int) time.Duration {
	if l.speed <= 0 {
		return 0
	}
	return time.Duration(n) * 20 * time.Second / time.Duration(l.speed)
}

func (l *link) writeParity(b []byte, par framing.Parity) (int, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.wbuf == nil {
		l.wbuf = make([]byte, 4096)
	}
	done := 0
	for done < len(b) {
		chunk := b[done:min(len(b), done+len(l.wbuf))]
		out := l.wbuf[:len(chunk)]
		for i, c := range chunk {
			out[i] = par.Apply(c)
		}
		n, err := l.p.Write(out)
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

func (l *link) Drain() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return l.p.Drain()
}

// SetReadDeadline sets the deadline for pending and future Reads, like
// os.File.SetReadDeadline. Only pty links support it; others return
// os.ErrNoDeadline. The engine does not need it: Close is what stops a
// reader.
func (l *link) SetReadDeadline(t time.Time) error {
	if d, ok := l.p.(deadliner); ok {
		return d.SetReadDeadline(t)
	}
	return os.ErrNoDeadline
}

// Close closes the line. A Read blocked in another goroutine returns
// ErrClosed. Closing twice is harmless.
func (l *link) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	err := l.p.Close()
	l.lock.release()
	return err
}

type flow int

const (
	flowNone flow = iota
	flowRTSCTS
	flowXONXOFF
)

func parseFlow(s string) (flow, error) {
	switch strings.ToLower(s) {
	case "", FlowNone:
		return flowNone, nil
	case FlowRTSCTS:
		return flowRTSCTS, nil
	case FlowXONXOFF:
		return flowXONXOFF, nil
	}
	return 0, fmt.Errorf("%w: flow %q is not one of none, rtscts, xonxoff", ErrInvalidConfig, s)
}
