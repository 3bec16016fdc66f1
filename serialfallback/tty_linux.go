package serialfallback

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Linux allots character-device majors 136..143 to Unix98 pty slaves
// (UNIX98_PTY_SLAVE_MAJOR and the 7 after it, Documentation/admin-guide/devices.txt).
const (
	ptySlaveMajorFirst = 136
	ptySlaveMajorLast  = 143
)

// isPty reports whether path names (possibly through symlinks, as socat's
// link= creates) a pseudo-terminal slave.
func isPty(path string) bool {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if strings.HasPrefix(path, "/dev/pts/") {
		return true
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return false
	}
	maj := unix.Major(uint64(st.Rdev)) // Rdev is uint32 on 32-bit MIPS
	return maj >= ptySlaveMajorFirst && maj <= ptySlaveMajorLast
}

// ttyPort is a tty opened by us with O_NONBLOCK, so that the os.File is
// served by the runtime poller: Close unblocks Read, deadlines work.
type ttyPort struct {
	f *os.File
}

// openTTY opens a pty slave (or any tty go.bug.st/serial would refuse) in
// raw mode: go.bug.st/serial's TIOCMGET/TIOCEXCL and speed handling are
// not meant for ptys.
func openTTY(path string, speed int, fl flow) (port, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("serialfallback: open %s: %w", path, err)
	}
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err == nil {
		makeRaw(t)
		setSpeed(t, speed)
		setFlow(t, fl)
		err = unix.IoctlSetTermios(fd, unix.TCSETS, t)
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("serialfallback: %s: set raw mode: %w", path, err)
	}
	// fd is non-blocking, so NewFile registers it with the poller.
	return &ttyPort{f: os.NewFile(uintptr(fd), path)}, nil
}

func (t *ttyPort) flushInput() error {
	rc, err := t.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = unix.IoctlSetInt(int(fd), unix.TCFLSH, unix.TCIFLUSH) }); err != nil {
		return err
	}
	return ferr
}

func (t *ttyPort) Read(p []byte) (int, error) {
	n, err := t.f.Read(p)
	if errors.Is(err, syscall.EIO) {
		// The other side of the pty (or the modem) hung up.
		err = io.EOF
	}
	return n, err
}

func (t *ttyPort) Write(p []byte) (int, error) { return t.f.Write(p) }

func (t *ttyPort) SetReadDeadline(d time.Time) error { return t.f.SetReadDeadline(d) }

func (t *ttyPort) Drain() error {
	rc, err := t.f.SyscallConn()
	if err != nil {
		return err
	}
	var derr error
	if err := rc.Control(func(fd uintptr) { derr = tcdrain(int(fd)) }); err != nil {
		return err
	}
	return derr
}

func (t *ttyPort) Close() error { return t.f.Close() }

// tcdrain waits until all output written to fd has been transmitted.
func tcdrain(fd int) error {
	for {
		// On Linux tcdrain(3) is ioctl(fd, TCSBRK, 1).
		err := unix.IoctlSetInt(fd, unix.TCSBRK, 1)
		if err != unix.EINTR {
			return err
		}
	}
}

// makeRaw is cfmakeraw(3) plus CLOCAL (ignore modem control lines) and
// CREAD, with reads returning as soon as one byte is there.
func makeRaw(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR |
		unix.IGNCR | unix.ICRNL | unix.IXON | unix.IXOFF | unix.IXANY | unix.INPCK |
		unix.IUCLC | unix.IMAXBEL
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN |
		unix.ECHOE | unix.ECHOK | unix.ECHOCTL | unix.ECHOKE | unix.ECHOPRT
	t.Cflag &^= unix.CSIZE | unix.PARENB | unix.PARODD | unix.CMSPAR | unix.CSTOPB
	t.Cflag |= unix.CS8 | unix.CREAD | unix.CLOCAL
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
}

func setFlow(t *unix.Termios, fl flow) {
	t.Cflag &^= unix.CRTSCTS
	t.Iflag &^= unix.IXON | unix.IXOFF | unix.IXANY
	switch fl {
	case flowRTSCTS:
		t.Cflag |= unix.CRTSCTS
	case flowXONXOFF:
		t.Iflag |= unix.IXON | unix.IXOFF
		t.Cc[unix.VSTART] = 0x11
		t.Cc[unix.VSTOP] = 0x13
	}
}

var termiosSpeeds = map[int]uint32{
	50: unix.B50, 75: unix.B75, 110: unix.B110, 134: unix.B134, 150: unix.B150,
	200: unix.B200, 300: unix.B300, 600: unix.B600, 1200: unix.B1200,
	1800: unix.B1800, 2400: unix.B2400, 4800: unix.B4800, 9600: unix.B9600,
	19200: unix.B19200, 38400: unix.B38400, 57600: unix.B57600,
	115200: unix.B115200, 230400: unix.B230400, 460800: unix.B460800,
	500000: unix.B500000, 576000: unix.B576000, 921600: unix.B921600,
	1000000: unix.B1000000, 1152000: unix.B1152000, 1500000: unix.B1500000,
	2000000: unix.B2000000, 2500000: unix.B2500000, 3000000: unix.B3000000,
	3500000: unix.B3500000, 4000000: unix.B4000000,
}

// setSpeed records a standard speed in t. Other speeds are left alone: on a
// pty the speed is only a number other programs may read back.
func setSpeed(t *unix.Termios, speed int) {
	b, ok := termiosSpeeds[speed]
	if !ok {
		return
	}
	t.Cflag &^= unix.CBAUD
	t.Cflag |= b
	t.Ispeed = b
	t.Ospeed = b
}

// flowSide is a second descriptor on a serial device, opened before
// go.bug.st/serial takes the device exclusively (TIOCEXCL), through which
// flow control is set afterwards: termios belongs to the device, not to
// the descriptor, and go.bug.st/serial always turns flow control off.
type flowSide struct {
	fd int
	fl flow
}

func openFlowSide(path string, fl flow) (*flowSide, error) {
	if fl == flowNone {
		return &flowSide{fd: -1}, nil
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &flowSide{fd: fd, fl: fl}, nil
}

func (s *flowSide) apply() error {
	if s.fd < 0 {
		return nil
	}
	t, err := unix.IoctlGetTermios(s.fd, unix.TCGETS)
	if err != nil {
		return err
	}
	setFlow(t, s.fl)
	return unix.IoctlSetTermios(s.fd, unix.TCSETS, t)
}

func (s *flowSide) close() {
	if s.fd >= 0 {
		unix.Close(s.fd)
	}
}

// setTTYFlow applies fl to the terminal fd (for Stdio links).
func setTTYFlow(fd int, fl flow) error {
	if fl == flowNone {
		return nil
	}
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	setFlow(t, fl)
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}
