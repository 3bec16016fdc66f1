//go:build linux

package datachan

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"kerf/framing"
)

// tempSource writes data to a file and returns it open for reading.
func tempSource(t *testing.T, data []byte) *os.File {
	t.Helper()
	name := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestZeroCopySend(t *testing.T) {
	const bs = 128 << 10
	for _, tc := range []struct {
		name     string
		size     int
		wantZero int64 // blocks of at least zeroCopyMin
	}{
		{"whole blocks", 24 * bs, 24},
		{"small tail copied", 10*bs + 1000, 10},
		{"large tail", 10*bs + zeroCopyMin, 11},
		{"one large block", bs, 1},
		{"one small block", zeroCopyMin - 1, 0},
		{"many blocks", 100*bs + 7, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, r := pathPair(t, 2, nil, WithBlockSize(bs), WithSendfile(SendfileAlways))
			data := randomData(uint64(tc.size), tc.size)
			transferFrom(t, s, r, 1, tempSource(t, data), data)
			st := s.Stats()
			if st.ZeroCopyBlocks != tc.wantZero {
				t.Fatalf("%d blocks sent with sendfile, want %d (stats %+v)", st.ZeroCopyBlocks, tc.wantZero, st)
			}
			if st.BytesSent != int64(tc.size) {
				t.Fatalf("%d bytes counted sent, want %d", st.BytesSent, tc.size)
			}
		})
	}
}

// A partial range (a resumed file) is sent from its offset.
func TestZeroCopyPartialRange(t *testing.T) {
	const bs = 128 << 10
	s, r := pathPair(t, 1, nil, WithBlockSize(bs), WithSendfile(SendfileAlways))
	data := randomData(9, 5*bs+333)
	src := tempSource(t, data)
	ctx := testContext(t)
	off := int64(bs + 4096 + 17) // not page aligned
	dst := newMemFile(len(data))
	if err := r.Expect(1, dst, off, int64(len(data))-off); err != nil {
		t.Fatal(err)
	}
	crc, err := s.SendFile(ctx, 1, src, off, int64(len(data))-off)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if want := framing.CRC32C(data[off:]); crc != want {
		t.Fatalf("crc %08x, want %08x", crc, want)
	}
	if !bytes.Equal(dst.bytes()[off:], data[off:]) {
		t.Fatal("received bytes differ")
	}
	if s.Stats().ZeroCopyBlocks == 0 {
		t.Fatal("nothing sent with sendfile")
	}
}

// A block damaged on the way is asked for again and re-sent (by the
// copying path), and the file arrives whole.
func TestZeroCopyDamagedBlockResent(t *testing.T) {
	dmg := new(damage)
	wrap := func(i int, c net.Conn) net.Conn { return &damageConn{Conn: c, block: 3, damage: dmg} }
	s, r := pathPair(t, 2, wrap, WithBlockSize(zeroCopyMin), WithSendfile(SendfileAlways))
	data := randomData(5, 20*zeroCopyMin)
	transferFrom(t, s, r, 1, tempSource(t, data), data)
	if !dmg.didDamage() {
		t.Fatal("no block was damaged")
	}
	waitFor(t, func() bool { return s.Stats().BlocksResent == 1 })
	if rs := r.Stats(); rs.BadBlocks != 1 {
		t.Fatalf("receiver %+v, want one bad block", rs)
	}
	if s.Stats().ZeroCopyBlocks < 19 {
		t.Fatalf("sender %+v: blocks were not sent with sendfile", s.Stats())
	}
}

// countingSource is a FileSource that counts what is read through it.
type countingSource struct {
	f    *os.File
	read atomic.Int64
}

func (c *countingSource) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(b, off)
	c.read.Add(int64(n))
	return n, err
}
func (c *countingSource) File() *os.File { return c.f }

// A FileSource wrapper gets sendfile too, and still sees every byte
// read through it once (progress reporting relies on it).
func TestZeroCopyFileSource(t *testing.T) {
	const bs = 128 << 10
	s, r := pathPair(t, 2, nil, WithBlockSize(bs), WithSendfile(SendfileAlways))
	data := randomData(6, 7*bs+100)
	src := &countingSource{f: tempSource(t, data)}
	transferFrom(t, s, r, 1, src, data)
	if got := src.read.Load(); got != int64(len(data)) {
		t.Fatalf("read %d bytes through the source, want %d", got, len(data))
	}
	if st := s.Stats(); st.ZeroCopyBlocks != 7 {
		t.Fatalf("%d blocks sent with sendfile, want 7", st.ZeroCopyBlocks)
	}
}

// plainWrapper hides the TCP connection, as TLS or a proxy would.
type plainWrapper struct{ net.Conn }

// Only a bare TCP connection gets sendfile; through any wrapper the data
// is copied (and still arrives).
func TestZeroCopyOnlyOnBareTCP(t *testing.T) {
	cc, sc := pairedConns(t, 1)
	if rawSocket(cc[0]) == nil {
		t.Fatal("no raw socket for a TCP connection")
	}
	if rawSocket(plainWrapper{cc[0]}) != nil || rawSocket(tls.Client(cc[0], &tls.Config{})) != nil {
		t.Fatal("raw socket for a wrapped connection")
	}
	s, r := NewPath([]net.Conn{plainWrapper{cc[0]}}, WithBlockSize(128<<10), WithSendfile(SendfileAlways)), NewPath(sc)
	t.Cleanup(func() { s.Close(); r.Close() })
	data := randomData(7, 1<<20)
	transferFrom(t, s, r, 1, tempSource(t, data), data)
	if st := s.Stats(); st.ZeroCopyBlocks != 0 {
		t.Fatalf("%d blocks sent with sendfile through a wrapper", st.ZeroCopyBlocks)
	}
}

// SendFile of a file shorter than the range it was given fails clearly.
func TestZeroCopyShortFile(t *testing.T) {
	s, _ := pathPair(t, 1, nil, WithBlockSize(128<<10), WithSendfile(SendfileAlways))
	data := randomData(10, 1<<20)
	src := tempSource(t, data)
	_, err := s.SendFile(testContext(t), 1, src, 0, 2<<20)
	if err == nil {
		t.Fatal("SendFile of a short file succeeded")
	}
	wantErrContaining(t, err, "reading file 1")
}

// A file that ended before its block did (it shrank after the block was
// read for its CRC) is padded with zeros, so the stream keeps its
// framing and the receiver sees a bad payload, not a broken stream.
func TestSendfilePadsShrunkFile(t *testing.T) {
	cc, sc := pairedConns(t, 1)
	t.Cleanup(func() { cc[0].Close(); sc[0].Close() })
	data := randomData(11, 1000)
	s := &stream{p: new(Path), conn: cc[0], raw: rawSocket(cc[0])}
	f := &frame{buf: make([]byte, framing.BlockHeaderLen)}
	copy(f.hdr(), bytes.Repeat([]byte{0xAB}, framing.BlockHeaderLen))
	const n = 16 << 20 // far more than the socket buffers: the padding waits (EAGAIN) and resumes
	f.src, f.srcOff, f.n = tempSource(t, data), 0, n
	errc := make(chan error, 1)
	go func() { errc <- s.sendfileFrame(f) }()
	got := make([]byte, framing.BlockHeaderLen+n)
	if _, err := io.ReadFull(sc[0], got); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("sendfileFrame: %v", err)
	}
	want := append(bytes.Repeat([]byte{0xAB}, framing.BlockHeaderLen), data...)
	want = append(want, make([]byte, n-len(data))...)
	if !bytes.Equal(got, want) {
		t.Fatal("frame on the wire is not header, file, zeros")
	}
}

// A file that sendfile refuses (EINVAL from some file systems and
// special files) is sent by copying instead, from where sendfile
// stopped; the data arrives whole.
func TestSendfileRefusedFallsBackToCopy(t *testing.T) {
	calls := 0
	sendfile = func(out, in int, off *int64, n int) (int, error) {
		calls++
		if calls == 1 {
			// Part of the block goes out before the refusal.
			return unix.Sendfile(out, in, off, min(n, 100_000))
		}
		return 0, unix.EINVAL
	}
	t.Cleanup(func() { sendfile = unix.Sendfile })
	const bs = 512 << 10
	s, r := pathPair(t, 1, nil, WithBlockSize(bs), WithSendfile(SendfileAlways))
	data := randomData(15, 3*bs+777)
	transferFrom(t, s, r, 1, tempSource(t, data), data)
	// The file's later blocks do not try sendfile again.
	if calls != 2 {
		t.Fatalf("sendfile called %d times, want 2 (a partial send, then the refusal)", calls)
	}
	if st := s.Stats(); st.ZeroCopyBlocks != 0 || st.BlocksSent != 4 {
		t.Fatalf("stats %+v: want 4 blocks sent, none counted as sendfile", st)
	}
}

// gateConn holds its reads until gate is closed: a receiver that has
// stopped reading.
type gateConn struct {
	net.Conn
	gate chan struct{}
}

func (c *gateConn) Read(p []byte) (int, error) {
	<-c.gate
	return c.Conn.Read(p)
}

// A SendFile cancelled while its sendfile blocks are queued returns,
// its caller closes the file, and the queued blocks are dropped unsent:
// the Path does not fail for it and goes on with the next file.
func TestZeroCopyCancelledSendFileClosesItsFile(t *testing.T) {
	gate := make(chan struct{})
	wrap := func(i int, c net.Conn) net.Conn { return &gateConn{Conn: c, gate: gate} }
	s, r := pathPair(t, 1, wrap, WithBlockSize(1<<20), WithSendfile(SendfileAlways))
	data := randomData(16, 64<<20) // far more than the socket buffers hold
	src := tempSource(t, data)
	ctx, cancel := context.WithCancel(testContext(t))
	errc := make(chan error, 1)
	go func() {
		_, err := s.SendFile(ctx, 1, src, 0, int64(len(data)))
		errc <- err
	}()
	waitFor(t, func() bool { return len(s.sendq) == cap(s.sendq) }) // blocked on the receiver
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("SendFile: %v, want context.Canceled", err)
	}
	src.Close()
	close(gate)
	// The queued blocks are dropped once the writer reaches them.
	waitFor(t, func() bool { return len(s.sendq) == 0 })
	data2 := randomData(17, 3<<20)
	transferFrom(t, s, r, 2, tempSource(t, data2), data2)
	if err := s.Err(); err != nil {
		t.Fatalf("the Path failed: %v", err)
	}
}

// By default a connection between two addresses of this host (here
// loopback) copies its blocks: sendfile only pays towards another host.
// SendfileAlways and SendfileNever override that.
func TestSendfileOnlyToAnotherHost(t *testing.T) {
	const bs = 128 << 10
	for _, tc := range []struct {
		name     string
		opts     []Option
		wantZero int64
	}{
		{"auto on loopback", nil, 0},
		{"always", []Option{WithSendfile(SendfileAlways)}, 8},
		{"never", []Option{WithSendfile(SendfileNever)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, r := pathPair(t, 2, nil, append([]Option{WithBlockSize(bs)}, tc.opts...)...)
			data := randomData(3, 8*bs)
			transferFrom(t, s, r, 1, tempSource(t, data), data)
			if st := s.Stats(); st.ZeroCopyBlocks != tc.wantZero || st.BlocksSent != 8 {
				t.Fatalf("%d of %d blocks sent with sendfile, want %d", st.ZeroCopyBlocks, st.BlocksSent, tc.wantZero)
			}
		})
	}
}

// Auto sends with sendfile on a connection to another host (here a
// loopback connection that sameHost is made to call another host's).
func TestSendfileAutoToAnotherHost(t *testing.T) {
	defer func(f func(net.Conn) bool) { onSameHost = f }(onSameHost)
	onSameHost = func(net.Conn) bool { return false }
	const bs = 128 << 10
	s, r := pathPair(t, 2, nil, WithBlockSize(bs))
	data := randomData(4, 8*bs)
	transferFrom(t, s, r, 1, tempSource(t, data), data)
	if st := s.Stats(); st.ZeroCopyBlocks != 8 {
		t.Fatalf("%d of %d blocks sent with sendfile, want all 8", st.ZeroCopyBlocks, st.BlocksSent)
	}
}

// addrConn is a connection that only has addresses.
type addrConn struct {
	net.Conn
	local, remote net.Addr
}

func (c addrConn) LocalAddr() net.Addr  { return c.local }
func (c addrConn) RemoteAddr() net.Addr { return c.remote }

func TestSameHost(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 1649} }
	for _, tc := range []struct {
		local, remote net.Addr
		want          bool
	}{
		{tcp("127.0.0.1"), tcp("127.0.0.1"), true},
		{tcp("127.0.0.1"), tcp("127.3.4.5"), true},
		{tcp("::1"), tcp("::1"), true},
		{tcp("192.0.2.7"), tcp("192.0.2.7"), true}, // the host's own address
		{tcp("::ffff:192.0.2.7"), tcp("192.0.2.7"), true},
		{tcp("192.0.2.7"), tcp("192.0.2.8"), false},
		{tcp("2001:db8::1"), tcp("2001:db8::2"), false},
		{&net.UnixAddr{Name: "a"}, &net.UnixAddr{Name: "b"}, false},
	} {
		if got := SameHost(addrConn{local: tc.local, remote: tc.remote}); got != tc.want {
			t.Errorf("SameHost(%v -> %v) = %v, want %v", tc.local, tc.remote, got, tc.want)
		}
	}
}
