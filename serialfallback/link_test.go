//go:build linux

package serialfallback

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kerf/framing"
	"kerf/internal/peertest"
)

func allBytes(repeat int) []byte {
	b := make([]byte, 0, 256*repeat)
	for range repeat {
		for c := range 256 {
			b = append(b, byte(c))
		}
	}
	return b
}

// readFull reads len(want) bytes from r within d and compares them.
func expectRead(t *testing.T, r io.Reader, want []byte, d time.Duration) {
	t.Helper()
	got := make([]byte, len(want))
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(r, got)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	case <-time.After(d):
		t.Fatalf("read: %d bytes not there after %v", len(want), d)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for got[i] == want[i] {
			i++
		}
		t.Fatalf("read %d bytes, first difference at %d: got %#02x want %#02x", len(got), i, got[i], want[i])
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	_, slave := peertest.PtyPair(t)
	for _, tc := range []struct {
		cfg  LinkConfig
		want string
	}{
		{LinkConfig{Device: slave, Parity: "bogus"}, `parity "bogus" is not one of none, even, odd, mark, space`},
		{LinkConfig{Device: slave, Parity: "7E1"}, `parity "7E1"`},
		{LinkConfig{Stdio: true, Parity: "evn"}, `parity "evn"`},
		{LinkConfig{Device: slave, Flow: "hardware"}, `flow "hardware" is not one of none, rtscts, xonxoff`},
		{LinkConfig{Device: slave, Speed: -1}, "speed -1 is negative"},
		{LinkConfig{}, "no device"},
	} {
		l, err := Open(tc.cfg)
		if err == nil {
			l.Close()
			t.Errorf("Open(%+v) succeeded", tc.cfg)
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v) = %v, want ErrInvalidConfig with %q", tc.cfg, err, tc.want)
		}
	}
}

func TestOpenMissingDevice(t *testing.T) {
	_, err := Open(LinkConfig{Device: "/dev/does-not-exist", Speed: 9600})
	if err == nil || !strings.Contains(err.Error(), "/dev/does-not-exist") {
		t.Fatalf("Open of a missing device = %v, want an error naming it", err)
	}
}

func TestIsPty(t *testing.T) {
	_, slave := peertest.PtyPair(t)
	link := t.TempDir() + "/line"
	if err := os.Symlink(slave, link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{slave: true, link: true, "/dev/null": false, "/dev/tty0-missing": false} {
		if got := isPty(path); got != want {
			t.Errorf("isPty(%s) = %v, want %v", path, got, want)
		}
	}
}

// roundTrip checks that l and the pty master pass every byte value both
// ways unchanged.
func roundTrip(t *testing.T, l io.ReadWriter, master *os.File) {
	t.Helper()
	data := allBytes(8)
	go func() {
		if _, err := l.Write(data); err != nil {
			t.Errorf("link write: %v", err)
		}
	}()
	expectRead(t, master, data, 5*time.Second)
	go func() {
		if _, err := master.Write(data); err != nil {
			t.Errorf("master write: %v", err)
		}
	}()
	expectRead(t, l, data, 5*time.Second)
}

func TestPtyEightBitClean(t *testing.T) {
	master, slave := peertest.PtyPair(t)
	l, err := Open(LinkConfig{Device: slave, Speed: 115200})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, ok := l.(*link).p.(*ttyPort); !ok {
		t.Fatalf("pty opened as %T, want *ttyPort", l.(*link).p)
	}
	roundTrip(t, l, master)
	if err := l.Drain(); err != nil {
		t.Errorf("Drain: %v", err)
	}
}

// The serial-port path (go.bug.st/serial) works on a pty too, which lets it
// be tested without hardware.
func TestSerialPathOverPty(t *testing.T) {
	master, slave := peertest.PtyPair(t)
	p, err := openSerial(slave, 115200, flowNone)
	if err != nil {
		t.Skipf("go.bug.st/serial cannot open a pty here: %v", err)
	}
	l := newLink(p, framing.ParityNone)
	defer l.Close()
	roundTrip(t, l, master)
	if err := l.Drain(); err != nil {
		t.Errorf("Drain: %v", err)
	}
	testCloseUnblocksRead(t, l)
}

func TestFlowSettings(t *testing.T) {
	for _, tc := range []struct {
		flow        string
		ixon, crtsc bool
	}{
		{"none", false, false},
		{"xonxoff", true, false},
		{"RTSCTS", false, true},
	} {
		t.Run(tc.flow, func(t *testing.T) {
			fl, _ := parseFlow(tc.flow)
			for name, open := range map[string]func(string) (port, error){
				"tty":    func(s string) (port, error) { return openTTY(s, 9600, fl) },
				"serial": func(s string) (port, error) { return openSerial(s, 9600, fl) },
			} {
				master, slave := peertest.PtyPair(t)
				p, err := open(slave)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				// On Linux the master reports the slave's termios.
				tio, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS)
				p.Close()
				if err != nil {
					t.Fatal(err)
				}
				if got := tio.Iflag&unix.IXON != 0 && tio.Iflag&unix.IXOFF != 0; got != tc.ixon {
					t.Errorf("%s: IXON|IXOFF = %v, want %v", name, got, tc.ixon)
				}
				if got := tio.Cflag&unix.CRTSCTS != 0; got != tc.crtsc {
					t.Errorf("%s: CRTSCTS = %v, want %v", name, got, tc.crtsc)
				}
				if tio.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 || tio.Oflag&unix.OPOST != 0 || tio.Cflag&unix.CSIZE != unix.CS8 {
					t.Errorf("%s: not raw 8-bit: %+v", name, tio)
				}
			}
		})
	}
}

func testCloseUnblocksRead(t *testing.T, l Link) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := l.Read(make([]byte, 64))
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-errc:
		t.Fatalf("Read returned before Close: %v", err)
	default:
	}
	start := time.Now()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) || !errors.Is(err, os.ErrClosed) {
			t.Errorf("pending Read after Close = %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not unblock a pending Read")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
	if _, err := l.Read(make([]byte, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close = %v, want ErrClosed", err)
	}
	if _, err := l.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestPtyCloseUnblocksRead(t *testing.T) {
	_, slave := peertest.PtyPair(t)
	l, err := Open(LinkConfig{Device: slave})
	if err != nil {
		t.Fatal(err)
	}
	testCloseUnblocksRead(t, l)
}

func TestPtyReadDeadline(t *testing.T) {
	_, slave := peertest.PtyPair(t)
	l, err := Open(LinkConfig{Device: slave})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, ok := l.(interface{ SetReadDeadline(time.Time) error })
	if !ok {
		t.Fatal("pty link has no SetReadDeadline")
	}
	if err := d.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past deadline = %v", err)
	}
}

func TestPtyHangupIsEOF(t *testing.T) {
	master, slave := peertest.PtyPair(t)
	l, err := Open(LinkConfig{Device: slave})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := l.Read(make([]byte, 1))
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	master.Close()
	select {
	case err := <-errc:
		if err != io.EOF {
			t.Fatalf("Read after hangup = %v, want io.EOF", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Read did not return after the master closed")
	}
}

func TestParityOnThePty(t *testing.T) {
	master, slave := peertest.PtyPair(t)
	l, err := Open(LinkConfig{Device: slave, Parity: "even"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out := []byte{'A', 'C', 0x00, 0x7F, 0xC3, 0x80}
	go l.Write(out)
	expectRead(t, master, []byte{'A', 'C' | 0x80, 0x00, 0xFF, 'C' | 0x80, 0x00}, 2*time.Second)
	go master.Write([]byte{'A' | 0x80, 'C' | 0x80, 0xFF})
	expectRead(t, l, []byte{'A', 'C', 0x7F}, 2*time.Second)

	// Longer than the link's scratch buffer, so writeParity loops.
	big := allBytes(40)
	want := make([]byte, len(big))
	for i, c := range big {
		want[i] = framing.ParityEven.Apply(c)
	}
	go l.Write(big)
	expectRead(t, master, want, 5*time.Second)
}

// A link opened without parity takes one later (SetParity), for both
// directions, and can drop it again.
func TestSetParityOnThePty(t *testing.T) {
	master, slave := peertest.PtyPair(t)
	l, err := Open(LinkConfig{Device: slave})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go l.Write([]byte{'C', 0xC3})
	expectRead(t, master, []byte{'C', 0xC3}, 2*time.Second)
	if err := l.SetParity("odd"); err != nil {
		t.Fatal(err)
	}
	go l.Write([]byte{'A', 'C', 0xC3})
	expectRead(t, master, []byte{'A' | 0x80, 'C', 'C'}, 2*time.Second)
	go master.Write([]byte{'A' | 0x80, 'C'})
	expectRead(t, l, []byte{'A', 'C'}, 2*time.Second)
	if err := l.SetParity("none"); err != nil {
		t.Fatal(err)
	}
	go l.Write([]byte{0xC3})
	expectRead(t, master, []byte{0xC3}, 2*time.Second)
	if err := l.SetParity("7E1"); err == nil {
		t.Error("SetParity(7E1) accepted")
	}
}

// TestLineem sends every byte value and random data both ways at once
// between two links on an emulated 115200 bps line.
func TestLineem(t *testing.T) {
	devA, devB := peertest.StartLineem(t, 115200, 0, 1)
	var links [2]Link
	for i, dev := range []string{devA, devB} {
		l, err := Open(LinkConfig{Device: dev, Speed: 115200})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		links[i] = l
	}
	data := [2][]byte{
		append(allBytes(4), peertest.RandomBytes(16<<10, 1)...),
		append(allBytes(4), peertest.RandomBytes(16<<10, 2)...),
	}
	// 17 KB each way takes 1.5 s of line time.
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			if _, err := links[i].Write(data[i]); err != nil {
				t.Errorf("write %d: %v", i, err)
			}
		})
	}
	expectRead(t, links[1], data[0], 10*time.Second)
	expectRead(t, links[0], data[1], 10*time.Second)
	wg.Wait()
	elapsed := time.Since(start)
	if ideal := time.Duration(float64(len(data[0])) / 11520 * float64(time.Second)); elapsed < ideal*9/10 {
		t.Errorf("%d bytes took %v, faster than the line's %v: not paced", len(data[0]), elapsed, ideal)
	}
	for _, l := range links {
		if err := l.Drain(); err != nil {
			t.Errorf("Drain: %v", err)
		}
	}
	testCloseUnblocksRead(t, links[0])
}

func TestStdioPortOverPty(t *testing.T) {
	master, slave := peertest.PtyPair(t)
	f, err := os.OpenFile(slave, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	setCooked(t, fd)
	p, err := openStdio(fd, fd, flowNone)
	if err != nil {
		t.Fatal(err)
	}
	l := newLink(p, framing.ParityNone)
	roundTrip(t, l, master)
	if err := l.Drain(); err != nil {
		t.Errorf("Drain: %v", err)
	}
	testCloseUnblocksRead(t, l)
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&unix.ICANON == 0 || tio.Lflag&unix.ECHO == 0 {
		t.Errorf("terminal not restored after Close: lflag %#x", tio.Lflag)
	}
}

func TestStdioPortOverPipes(t *testing.T) {
	var in, out [2]int
	if err := unix.Pipe(in[:]); err != nil {
		t.Fatal(err)
	}
	if err := unix.Pipe(out[:]); err != nil {
		t.Fatal(err)
	}
	// out[0] is owned by an *os.File below: closing the number here too
	// would let that File's finalizer later close whatever fd reused it
	// (it once closed another test's pty mid-transfer).
	outR := os.NewFile(uintptr(out[0]), "out")
	defer outR.Close()
	defer func() {
		for _, fd := range []int{in[0], in[1], out[1]} {
			unix.Close(fd)
		}
	}()
	p, err := openStdio(in[0], out[1], flowNone)
	if err != nil {
		t.Fatal(err)
	}
	l := newLink(p, framing.ParityNone)
	data := allBytes(2)
	unix.Write(in[1], data)
	expectRead(t, l, data, 2*time.Second)
	if _, err := l.Write(data); err != nil {
		t.Fatal(err)
	}
	expectRead(t, outR, data, 2*time.Second)
	testCloseUnblocksRead(t, l)
	if fl, _ := unix.FcntlInt(uintptr(in[0]), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
		t.Error("stdin left non-blocking")
	}
}

// setCooked puts the terminal fd in ordinary line mode, as a login shell
// leaves it.
func setCooked(t *testing.T, fd int) {
	t.Helper()
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag |= unix.ICANON | unix.ECHO | unix.ISIG | unix.IEXTEN
	tio.Iflag |= unix.ICRNL | unix.IXON
	tio.Oflag |= unix.OPOST | unix.ONLCR
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
}

const stdioHelperEnv = "SERIALFALLBACK_STDIO_HELPER"

// TestStdioHelperProcess is the remote Kermit of TestStdioSubprocess: it
// opens Open(LinkConfig{Stdio: true}), says "R", and sends back each of
// 1024 bytes it reads, complemented.
func TestStdioHelperProcess(t *testing.T) {
	if os.Getenv(stdioHelperEnv) != "1" {
		t.Skip("helper process for TestStdioSubprocess")
	}
	fail := func(err error) {
		os.Stderr.WriteString("helper: " + err.Error() + "\n")
		os.Exit(1)
	}
	l, err := Open(LinkConfig{Stdio: true})
	if err != nil {
		fail(err)
	}
	if _, err := l.Write([]byte("R")); err != nil {
		fail(err)
	}
	buf := make([]byte, 1024)
	if _, err := io.ReadFull(l, buf); err != nil {
		fail(err)
	}
	for i := range buf {
		buf[i] = ^buf[i]
	}
	if _, err := l.Write(buf); err != nil {
		fail(err)
	}
	if err := l.Drain(); err != nil {
		fail(err)
	}
	if err := l.Close(); err != nil {
		fail(err)
	}
	os.Exit(0)
}

// TestStdioSubprocess runs a process whose stdin and stdout are a cooked
// terminal, as at a shell prompt, and checks that Open(Stdio) makes it
// raw and 8-bit clean and that Close restores it.
func TestStdioSubprocess(t *testing.T) {
	master, slave := peertest.PtyPair(t)
	f, err := os.OpenFile(slave, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	setCooked(t, int(f.Fd()))

	var stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestStdioHelperProcess$")
	cmd.Env = append(os.Environ(), stdioHelperEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f, f, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	expectRead(t, master, []byte("R"), 10*time.Second)
	data := allBytes(4)
	go master.Write(data)
	want := make([]byte, len(data))
	for i, c := range data {
		want[i] = ^c
	}
	expectRead(t, master, want, 5*time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("helper: %v: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("helper did not exit: %s", stderr.String())
	}
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&unix.ICANON == 0 || tio.Oflag&unix.OPOST == 0 {
		t.Errorf("terminal not restored after the helper closed its link: lflag %#x oflag %#x", tio.Lflag, tio.Oflag)
	}
}

// A write to a line that takes nothing (the pty's master is never read,
// as a dead peer behind a full buffer) fails with ErrStalled once the
// stall timeout passes, instead of blocking forever, and closes the link.
func TestPtyStalledWriteFails(t *testing.T) {
	_, slave := peertest.PtyPair(t) // nobody reads the master
	l, err := Open(LinkConfig{Device: slave, StallTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := l.Write(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrStalled) {
			t.Fatalf("stalled write = %v, want ErrStalled", err)
		}
	case <-time.After(time.Minute): // a safety net, not a threshold
		t.Fatal("write to a line nobody reads never failed")
	}
	if _, err := l.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("write after a stall = %v, want ErrClosed", err)
	}
}
