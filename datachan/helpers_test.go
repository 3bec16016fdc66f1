package datachan

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/framing"
)

// memFile is an in-memory io.WriterAt of fixed size.
type memFile struct {
	mu sync.Mutex
	b  []byte
}

func newMemFile(n int) *memFile { return &memFile{b: make([]byte, n)} }

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 || off+int64(len(p)) > int64(len(m.b)) {
		return 0, fmt.Errorf("memFile: write [%d,%d) beyond %d", off, off+int64(len(p)), len(m.b))
	}
	return copy(m.b[off:], p), nil
}

func (m *memFile) bytes() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.b)
}

func randomData(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pairedConns pairs streams loopback TCP connections through a Listener
// and returns the client's and the server's ends, in stream order.
func pairedConns(t testing.TB, streams int) (client, server []net.Conn) {
	t.Helper()
	l, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tok := NewToken()
	pend := l.Expect(tok, net.IPv4(127, 0, 0, 1), streams, 10*time.Second)
	ctx := testContext(t)
	client, err = Dial(ctx, l.Addr().String(), tok, streams, nil)
	if err != nil {
		t.Fatal(err)
	}
	server, err = pend.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return client, server
}

// pathPair returns two Paths joined by streams loopback TCP connections;
// wrap, if not nil, wraps the receiving (server) side's connections.
func pathPair(t testing.TB, streams int, wrap func(i int, c net.Conn) net.Conn, opts ...Option) (sender, receiver *Path) {
	t.Helper()
	cc, sc := pairedConns(t, streams)
	if wrap != nil {
		for i := range sc {
			sc[i] = wrap(i, sc[i])
		}
	}
	sender, receiver = NewPath(cc, opts...), NewPath(sc, opts...)
	t.Cleanup(func() { sender.Close(); receiver.Close() })
	return sender, receiver
}

// transfer sends data as file id from s to r and checks what arrives.
func transfer(t testing.TB, s, r *Path, id uint32, data []byte) {
	t.Helper()
	transferFrom(t, s, r, id, bytes.NewReader(data), data)
}

// transferFrom sends src (holding data) as file id from s to r and checks
// what arrives and both CRCs.
func transferFrom(t testing.TB, s, r *Path, id uint32, src io.ReaderAt, data []byte) {
	t.Helper()
	ctx := testContext(t)
	dst := newMemFile(len(data))
	if err := r.Expect(id, dst, 0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	sendCRC, err := s.SendFile(ctx, id, src, 0, int64(len(data)))
	if err != nil {
		t.Fatalf("SendFile: %v", err)
	}
	recvCRC, err := r.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if want := framing.CRC32C(data); sendCRC != want || recvCRC != want {
		t.Fatalf("crc: sent %08x, received %08x, want %08x", sendCRC, recvCRC, want)
	}
	if !bytes.Equal(dst.bytes(), data) {
		t.Fatalf("file %d: received bytes differ", id)
	}
	s.Release(id)
}

// checkGoroutines fails t if the goroutine count does not settle back to
// at most before.
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines left, had %d before:\n%s", n, before, buf)
	}
}

// damageConn flips one bit in the n-th block (1-based) read from the
// connection, in its payload or in its header. Connections sharing a
// damage make one flip between them, on the first to reach its n-th block.
type damageConn struct {
	net.Conn
	block    int
	inHeader bool
	always   bool // every payload from the block-th on, resent ones too
	*damage

	hdr     [framing.BlockHeaderLen]byte
	hdrFill int
	payload int // payload bytes of the current block still to come
	seen    int // blocks whose header has been read
}

type damage struct {
	mu   sync.Mutex
	done bool
}

func (c *damageConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 0; i < n; {
		if c.payload > 0 {
			k := min(c.payload, n-i)
			if c.always && c.seen >= c.block {
				p[i+k/2] ^= 0x10
				c.done = true
			} else if !c.done && !c.inHeader && c.seen == c.block {
				p[i+k/2] ^= 0x10
				c.done = true
			}
			c.payload -= k
			i += k
			continue
		}
		c.hdr[c.hdrFill] = p[i]
		if !c.done && c.inHeader && c.seen+1 == c.block && c.hdrFill == 14 {
			p[i] ^= 0x01 // in the offset
			c.done = true
		}
		c.hdrFill++
		i++
		if c.hdrFill == len(c.hdr) {
			c.hdrFill = 0
			c.seen++
			if string(c.hdr[:4]) == framing.BlockMagic {
				c.payload = int(binary.BigEndian.Uint32(c.hdr[20:24]))
			}
		}
	}
	return n, err
}

func (d *damage) didDamage() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done
}

func wantErrContaining(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not contain %q", err, p)
		}
	}
}
