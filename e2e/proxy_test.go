package e2e

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultServer is a kerf server on 127.0.0.2 behind proxies on 127.0.0.1:
// a plain one for the control connection and a dataProxy at the data port
// the server announces, which the client therefore dials.
type faultServer struct {
	*server
	ctl  *proxy // clients connect here
	data *proxy
}

func startFaultServer(t *testing.T, root string, plain bool, serveArgs ...string) *faultServer {
	t.Helper()
	for attempt := 0; ; attempt++ {
		srv := startServer(t, root, serverOpts{host: "127.0.0.2", plain: plain, args: serveArgs})
		_, dport, _ := net.SplitHostPort(srv.dataAddr)
		data, err := listenProxy("127.0.0.1:"+dport, srv.dataAddr, true)
		if err != nil {
			if attempt < 5 {
				continue // the port is taken on 127.0.0.1; try another server
			}
			t.Fatal(err)
		}
		t.Cleanup(data.close)
		ctl, err := listenProxy("127.0.0.1:0", srv.addr, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ctl.close)
		return &faultServer{server: srv, ctl: ctl, data: data}
	}
}

// addr is where clients connect.
func (f *faultServer) addr() string { return f.ctl.ln.Addr().String() }

// proxy forwards TCP connections to target. A data proxy also follows
// the data-channel frames (docs/protocol-datachan.md) in both directions,
// when they are not encrypted, and can damage, slow or cut them.
type proxy struct {
	ln     net.Listener
	target string
	frames bool

	// Faults, set before the client connects.
	corruptUp  atomic.Int32 // payloads client->server to damage (one bit each)
	corruptDn  atomic.Int32 // payloads server->client to damage
	cutAfter   atomic.Int64 // close the connection after this many bytes client->server (0: never)
	cutDown    atomic.Int64 // close the connection after this many bytes server->client (0: never)
	cutOnce    atomic.Bool  // cutDown is cleared by its cut: later connections pass (a redial)
	flipUpAt   atomic.Int64 // flip one bit of the byte at this offset of the client->server bytes (0: never)
	rateUp     atomic.Int64 // bytes per second client->server (0: unlimited)
	holdDownAt atomic.Int64 // file offset + 1 of a server->client block that never arrives: its connection stalls there (0: none)
	holdMid    atomic.Bool  // holdDownAt holds in the middle of the block: its header and first 64 KiB pass, as a proxy stopped at any byte does
	dropDown   atomic.Bool  // server->client bytes are read and dropped from now on (a plain copy only)
	delayDown  atomic.Int64 // nanoseconds each server->client read waits before it is passed on (a plain copy only): a longer path
	paused     atomic.Bool  // bytes wait, both ways, until it is cleared: an outage TCP rides out
	frozen     atomic.Bool  // nothing passes either way from now on, and nothing is closed, not even after a client's end: a link cut without a reset
	upBytes    atomic.Int64 // bytes forwarded client->server
	downBytes  atomic.Int64 // bytes forwarded server->client
	conns      atomic.Int32
	cuts       atomic.Int32
	mu         sync.Mutex
	blocks     map[blockKey]int // data blocks seen, by direction, file and offset
	resendReqs int              // resend requests seen
	corrupted  []blockKey
	wg         sync.WaitGroup
	closing    chan struct{}
	closeOnce  sync.Once
	released   chan struct{} // closed by releaseHold: held connections go on
	releaseOne sync.Once
	open       map[net.Conn]bool
}

type blockKey struct {
	up     bool
	file   uint32
	offset uint64
}

func listenProxy(addr, target string, frames bool) (*proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, frames: frames, blocks: map[blockKey]int{}, closing: make(chan struct{}), released: make(chan struct{}), open: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// releaseHold lets the connections held at holdDownAt go on.
func (p *proxy) releaseHold() { p.releaseOne.Do(func() { close(p.released) }) }

func (p *proxy) close() {
	p.closeOnce.Do(p.shut)
}

func (p *proxy) shut() {
	close(p.closing)
	p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closing:
		c.Close()
		return false
	default:
	}
	p.open[c] = true
	return true
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}
		s, err := d.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if p.holdDownAt.Load() > 0 {
			// A held connection keeps what the server wrote after the
			// held block in its buffers, and autotuning let this end's
			// grow to many MiB: the blocks after it all went there under
			// load, none on the other connections (a test waiting for
			// data past the held block timed out). Bounded here, the
			// rest is the server's send buffer (tcp_wmem, 4 MiB at most).
			s.(*net.TCPConn).SetReadBuffer(128 << 10)
		}
		if !p.track(c) || !p.track(s) {
			c.Close()
			s.Close()
			continue
		}
		p.conns.Add(1)
		p.wg.Add(2)
		go p.pipe(s, c, true)
		go p.pipe(c, s, false)
	}
}

// pipe copies src to dst. For a data proxy it reads the stream as the
// hello (up) or status byte (down) and then frames, so that it can count
// blocks and resend requests and damage chosen payloads.
func (p *proxy) pipe(dst, src net.Conn, up bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	defer p.hold()
	if !p.frames {
		p.copyCounted(dst, src, up)
		return
	}
	prefix := 1
	if up {
		prefix = 42
	}
	if p.forward(dst, src, prefix, up) != nil {
		return
	}
	hdr := make([]byte, 32)
	buf := make([]byte, 64<<10)
	holdMid := false // hold after the first part of this block's payload
	for {
		if _, err := io.ReadFull(src, hdr); err != nil {
			return
		}
		var payload uint32
		magic := string(hdr[:4])
		key := blockKey{up: up, file: binary.BigEndian.Uint32(hdr[8:12]), offset: binary.BigEndian.Uint64(hdr[12:20])}
		switch magic {
		case "KRFB":
			payload = binary.BigEndian.Uint32(hdr[20:24])
			p.mu.Lock()
			p.blocks[key]++
			p.mu.Unlock()
			if h := p.holdDownAt.Load(); !up && h > 0 && key.offset == uint64(h-1) {
				// The block and everything after it on this connection
				// stay here, until releaseHold; the other connections
				// go on.
				if holdMid = p.holdMid.Load(); !holdMid && !p.heldDown() {
					return
				}
			}
		case "KRFN":
			p.mu.Lock()
			p.resendReqs++
			p.mu.Unlock()
		default:
			// Not a frame we know (TLS, or garbage): pass the rest through,
			// still counted, slowed and cut.
			if _, err := dst.Write(hdr); err != nil || p.count(up, 32) {
				return
			}
			p.copyCounted(dst, src, up)
			return
		}
		if _, err := dst.Write(hdr); err != nil {
			return
		}
		if p.count(up, 32) {
			return
		}
		corrupt := &p.corruptDn
		if up {
			corrupt = &p.corruptUp
		}
		damage := payload > 0 && corrupt.Add(-1) >= 0
		if damage {
			p.mu.Lock()
			p.corrupted = append(p.corrupted, key)
			p.mu.Unlock()
		}
		for left := int(payload); left > 0; {
			b := buf[:min(left, len(buf))]
			if _, err := io.ReadFull(src, b); err != nil {
				return
			}
			if damage {
				b[len(b)/2] ^= 0x10 // one bit, mid-payload
				damage = false
			}
			if _, err := dst.Write(b); err != nil {
				return
			}
			left -= len(b)
			if p.count(up, int64(len(b))) {
				return
			}
			if holdMid {
				holdMid = false
				if !p.heldDown() {
					return
				}
			}
		}
	}
}

// heldDown waits for releaseHold (holdDownAt), and reports false if
// the proxy closes first.
func (p *proxy) heldDown() bool {
	select {
	case <-p.closing:
		return false
	case <-p.released:
		return true
	}
}

// copyCounted copies src to dst in small chunks through count, so that
// rates and cuts apply to streams the proxy cannot parse (TLS).
func (p *proxy) copyCounted(dst, src net.Conn, up bool) {
	buf := make([]byte, 16<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if at := p.flipUpAt.Load(); up && at > 0 {
				// Offsets count all upstream bytes of the proxy; tests
				// that flip use one connection.
				if start := p.upBytes.Load(); at >= start && at < start+int64(n) {
					buf[at-start] ^= 0x08
					p.flipUpAt.Store(0)
				}
			}
			if !up && p.dropDown.Load() {
				continue // lost on the way; the end still comes through
			}
			if d := p.delayDown.Load(); !up && d > 0 {
				time.Sleep(time.Duration(d))
			}
			if _, werr := dst.Write(buf[:n]); werr != nil || p.count(up, int64(n)) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forward copies n bytes unchanged.
func (p *proxy) forward(dst, src net.Conn, n int, up bool) error {
	_, err := io.CopyN(dst, src, int64(n))
	p.count(up, int64(n))
	return err
}

// hold waits, while the proxy is frozen, until it is closed.
func (p *proxy) hold() {
	if p.frozen.Load() {
		<-p.closing
	}
}

// count records n forwarded bytes, sleeps to keep the upstream rate, and
// reports whether the connection has been cut.
func (p *proxy) count(up bool, n int64) (cut bool) {
	for p.paused.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	if p.frozen.Load() {
		return true // and pipe's hold keeps both ends open
	}
	if !up {
		total := p.downBytes.Add(n)
		if c := p.cutDown.Load(); c > 0 && total >= c {
			p.cuts.Add(1)
			if p.cutOnce.Load() {
				p.cutDown.Store(0)
			}
			return true
		}
		return false
	}
	total := p.upBytes.Add(n)
	if r := p.rateUp.Load(); r > 0 {
		time.Sleep(time.Duration(float64(n) / float64(r) * float64(time.Second)))
	}
	if c := p.cutAfter.Load(); c > 0 && total >= c {
		p.cuts.Add(1)
		return true
	}
	return false
}

// stats returns copies of the frame counters.
func (p *proxy) stats() (blocks map[blockKey]int, resendReqs int, corrupted []blockKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	blocks = map[blockKey]int{}
	for k, v := range p.blocks {
		blocks[k] = v
	}
	return blocks, p.resendReqs, append([]blockKey(nil), p.corrupted...)
}
