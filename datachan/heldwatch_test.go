package datachan

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// heldConn passes its first n bytes on, then no more until closed: a
// proxy that stopped forwarding one flow, seen from its far end.
type heldConn struct {
	net.Conn
	mu      sync.Mutex
	n       int
	stopped chan struct{}
	once    sync.Once
}

func (h *heldConn) Read(b []byte) (int, error) {
	h.mu.Lock()
	left := h.n
	h.mu.Unlock()
	if left <= 0 {
		<-h.stopped
		return 0, net.ErrClosed
	}
	k, err := h.Conn.Read(b[:min(len(b), left)])
	h.mu.Lock()
	h.n -= k
	h.mu.Unlock()
	return k, err
}

func (h *heldConn) Close() error {
	h.once.Do(func() { close(h.stopped) })
	return h.Conn.Close()
}

func withHeldGrace(d time.Duration) Option { return func(c *config) { c.heldGrace = d } }

// One connection held by the path while the other carries the file's
// later blocks: the receiver gives the Path up, naming the connection,
// well before the idle timeout (QA y: 5 minutes).
func TestHeldConnectionIsGivenUp(t *testing.T) {
	const grace = 2 * time.Second // after heldQuiet (5 s)
	wrap := func(i int, c net.Conn) net.Conn {
		if i == 1 {
			return &heldConn{Conn: c, n: 3 << 20, stopped: make(chan struct{})}
		}
		// Idle once the file's other blocks are in: its keepalive's
		// answers say the path works (Go's default is 15 s).
		c.(*net.TCPConn).SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 3})
		return c
	}
	s, r := pathPair(t, 2, wrap, withHeldGrace(grace))
	data := randomData(7, 48<<20)
	dst := newMemFile(len(data))
	if err := r.Expect(1, dst, 0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	go s.SendFile(ctx, 1, bytes.NewReader(data), 0, int64(len(data)))
	start := time.Now()
	_, err := r.Wait(ctx, 1)
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "nothing came on it") {
		t.Fatalf("Wait: %v; want the held connection named", err)
	}
	if took := time.Since(start); took < heldQuiet+grace {
		t.Errorf("given up after %v, before the quiet and the grace (%v)", took, heldQuiet+grace)
	}
	prefix, kept := r.AbandonKept(1)
	var got int64
	for _, k := range kept {
		got += k[1] - k[0]
	}
	if prefix+got == 0 {
		t.Error("nothing kept of what came")
	}
}

// A connection with nothing to carry is not held: small files go on the
// first free connection, and the second waits for as long as they come,
// past the quiet and the grace.
func TestIdleConnectionIsNotHeld(t *testing.T) {
	s, r := pathPair(t, 2, nil, withHeldGrace(time.Second))
	deadline := time.Now().Add(heldQuiet + 3*time.Second) // past the quiet and the grace
	for id := uint32(1); time.Now().Before(deadline); id++ {
		transfer(t, s, r, id, randomData(uint64(id), 4000))
		time.Sleep(20 * time.Millisecond)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("the receiving Path failed: %v", err)
	}
}

// A slow link: one connection carries a block for longer than the
// watch's quiet and grace while the other waits between blocks. Neither
// is held: the one carrying the block is heard from all along (review
// 52: a get at 20 KB/s was given up every 45 s, for ever).
func TestSlowBlockIsNotHeld(t *testing.T) {
	lim := NewLimiter(150 << 10)
	s, r := pathPair(t, 2, nil, withHeldGrace(time.Second), WithRateLimit(lim))
	data := randomData(8, 1<<20+1000) // one big block, and a small one
	start := time.Now()
	transfer(t, s, r, 1, data)
	if took := time.Since(start); took < heldQuiet+2*time.Second {
		t.Fatalf("the transfer took %v: too quick to show anything", took)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("the receiving Path failed: %v", err)
	}
}

// held itself: each condition it needs, taken away in turn.
func TestHeldJudge(t *testing.T) {
	const sec = int64(time.Second)
	now := 1000 * sec
	type state struct {
		mid       bool  // stream 1 is in the middle of a block of file 3
		waiting   int64 // stream 1's reader waiting since (0: not in a read)
		otherData int64 // stream 0's last bytes
		file      int   // 0 expected, 1 every block come, 2 abandoned, 3 not expected
	}
	held := state{mid: true, waiting: now - 50*sec, otherData: now - sec}
	for _, tc := range []struct {
		name string
		st   state
		want bool
	}{
		{"held", held, true},
		{"between blocks (nothing owed)", state{false, held.waiting, held.otherData, 0}, false},
		{"not reading (its disk behind)", state{true, 0, held.otherData, 0}, false},
		{"waiting a moment only", state{true, now - 3*sec, held.otherData, 0}, false},
		{"nothing came on the others since (an outage)", state{true, held.waiting, now - 49*sec, 0}, false},
		{"heard after it stopped, not lately (an outage since)", state{true, held.waiting, now - 30*sec, 0}, false},
		{"every block of the file came (the disk is behind)", state{true, held.waiting, held.otherData, 1}, false},
		{"a file let go", state{true, held.waiting, held.otherData, 2}, false},
		{"a file not expected yet (parked)", state{true, held.waiting, held.otherData, 3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Path{files: map[uint32]*recvFile{}}
			for i := range 2 {
				p.streams = append(p.streams, &stream{p: p, idx: i, conn: &net.TCPConn{}})
			}
			w := &p.streams[1].in.w
			w.waiting.Store(tc.st.waiting)
			if tc.st.mid {
				w.reading(3, 10)
			}
			p.streams[0].in.w.data.Store(tc.st.otherData)
			f := &recvFile{id: 3, dst: newMemFile(1), off: 0, end: 100}
			f.got = spans{{start: 0, end: 10}, {start: 20, end: 30}}
			switch tc.st.file {
			case 1:
				f.got = spans{{start: 0, end: 100}}
			case 2:
				f.abandoned = true
			}
			if tc.st.file != 3 {
				p.files[3] = f
			}
			if _, _, _, got := p.held(1, now); got != tc.want {
				t.Errorf("held: %v; want %v", got, tc.want)
			}
			if _, _, _, got := p.held(0, now); got {
				t.Error("the connection heard from is held")
			}
		})
	}
}

// throttledPaths joins two Paths by TLS data connections through a
// proxy that passes the sender's bytes of the n-th connection at
// rates[n] bytes a second (a slow link shared unevenly).
func throttledPaths(t *testing.T, rates []int, opts ...Option) (s, r *Path) {
	t.Helper()
	st, ct := testTLS(t)
	l, err := Listen("127.0.0.1:0", st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); u.Close() })
			rate := rates[min(i, len(rates)-1)]
			go io.Copy(c, u)
			go func() {
				buf := make([]byte, 1024)
				for {
					k, err := c.Read(buf)
					if k > 0 {
						if _, err := u.Write(buf[:k]); err != nil {
							return
						}
						time.Sleep(time.Duration(k) * time.Second / time.Duration(rate))
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	tok := NewToken()
	pend := l.Expect(tok, net.IPv4(127, 0, 0, 1), len(rates), 10*time.Second)
	ctx := testContext(t)
	cc, err := Dial(ctx, ln.Addr().String(), tok, len(rates), ct)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := pend.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, r = NewPath(cc, opts...), NewPath(sc, opts...)
	t.Cleanup(func() { s.Close(); r.Close() })
	return s, r
}

// A slow TLS connection: its read returns nothing until a whole data
// record (256 KiB) is in, 11 s at 24 KB/s, longer than the quiet and the
// grace; the kernel says its bytes come (TCP_INFO), so it is not held
// (review 52b: given up over and over).
func TestSlowTLSRecordIsNotHeld(t *testing.T) {
	s, r := throttledPaths(t, []int{256 << 10, 24 << 10}, withHeldGrace(time.Second))
	data := randomData(9, 8<<20)
	if err := r.Expect(1, newMemFile(len(data)), 0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel()
	go s.SendFile(ctx, 1, bytes.NewReader(data), 0, int64(len(data)))
	if _, err := r.Wait(ctx, 1); errors.Is(err, ErrStalled) {
		t.Fatalf("a slow connection was given up: %v", err)
	}
}
