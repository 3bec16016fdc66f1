package datachan

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Limiter caps the bytes per second that the connections sharing it
// carry, reads and writes together (a token bucket): what scp -l, rsync
// --bwlimit and curl --limit-rate do, so that a bulk push leaves room on
// a shared link. A writer is held back before its bytes go; a reader
// after its bytes came, so that it reads less and the peer's TCP (or
// QUIC) flow control slows the sender.
type Limiter struct {
	rate  float64 // bytes per second
	burst float64 // what the bucket holds: a short pause is not saved up

	mu     sync.Mutex
	tokens float64 // may be negative: bytes taken ahead, to be waited for
	last   time.Time

	now   func() time.Time                            // tests
	sleep func(d time.Duration, stop <-chan struct{}) // tests
}

// MinRate is the lowest rate a Limiter takes, in bytes per second.
const MinRate = 1024

// NewLimiter returns a Limiter of bytesPerSecond (at least MinRate).
func NewLimiter(bytesPerSecond int64) *Limiter {
	rate := float64(max(bytesPerSecond, MinRate))
	return &Limiter{
		rate: rate,
		// A twentieth of a second of data: the rate holds over any span
		// longer than that.
		burst: max(rate/20, 1024),
		now:   time.Now,
		sleep: sleepUnless,
	}
}

// Rate returns the limit in bytes per second.
func (l *Limiter) Rate() int64 { return int64(l.rate) }

// chunk is the most one Read or Write of a limited connection moves at
// once, so that no wait is longer than about a twentieth of a second
// and a closed connection is let go soon.
func (l *Limiter) chunk() int { return int(l.burst) }

// take counts n bytes and returns how long their mover must wait for
// the rate to hold.
func (l *Limiter) take(n int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.last.IsZero() {
		l.tokens = l.burst
	} else {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	l.tokens -= float64(n)
	if l.tokens >= 0 {
		return 0
	}
	return time.Duration(-l.tokens / l.rate * float64(time.Second))
}

// sleepUnless sleeps for d, or until stop is closed.
func sleepUnless(d time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	}
}

// LimitConn returns c with its reads and writes held to l's rate (with
// the other connections of l). It hides what c is (a bare TCP socket
// loses sendfile): a limited transfer does not need the speed.
func LimitConn(c net.Conn, l *Limiter) net.Conn { return limit(c, l, nil) }

// limit is LimitConn, counting each part written into moved if set.
func limit(c net.Conn, l *Limiter, moved *atomic.Int64) *limitedConn {
	return &limitedConn{Conn: c, l: l, closed: make(chan struct{}), moved: moved}
}

type limitedConn struct {
	net.Conn
	l         *Limiter
	closeOnce sync.Once
	closed    chan struct{}
	moved     *atomic.Int64 // if set, counts each part written (a block goes in many)
}

func (c *limitedConn) Read(p []byte) (int, error) {
	if len(p) > c.l.chunk() {
		p = p[:c.l.chunk()]
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.l.sleep(c.l.take(n), c.closed)
	}
	return n, err
}

func (c *limitedConn) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		part := p[:min(len(p), c.l.chunk())]
		c.l.sleep(c.l.take(len(part)), c.closed)
		select {
		case <-c.closed:
			return written, net.ErrClosed
		default:
		}
		n, err := c.Conn.Write(part)
		written += n
		if c.moved != nil {
			c.moved.Add(int64(n))
		}
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

func (c *limitedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// NetConn returns the connection underneath (Tune reaches the socket
// through it).
func (c *limitedConn) NetConn() net.Conn { return c.Conn }
