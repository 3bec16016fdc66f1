package datachan

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Limiter's clock that moves only when the Limiter
// sleeps: the time a transfer took is then what the limit made it take,
// whatever the machine's speed.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) sleep(d time.Duration, _ <-chan struct{}) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func fakeLimiter(rate int64) (*Limiter, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	l := NewLimiter(rate)
	l.now, l.sleep = clk.now, clk.sleep
	return l, clk
}

// discardConn is a connection whose writes go nowhere and whose reads
// give zeros.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error) { return len(p), nil }
func (discardConn) Read(p []byte) (int, error)  { clear(p); return len(p), nil }
func (discardConn) Close() error                { return nil }

// Reads and writes through connections sharing a Limiter take, together,
// the time their bytes take at the rate (less the burst it lets go at
// once).
func TestLimiterHoldsTheRate(t *testing.T) {
	const rate = 10 << 20
	const n = 40 << 20
	l, clk := fakeLimiter(rate)
	a, b := LimitConn(discardConn{}, l), LimitConn(discardConn{}, l)
	start := clk.now()
	buf := make([]byte, 1<<20)
	for moved := 0; moved < n; moved += 2 * len(buf) {
		// One connection writes while the other reads, as a send's
		// blocks and a get's would.
		if _, err := a.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(b, buf); err != nil {
			t.Fatal(err)
		}
	}
	took := clk.now().Sub(start)
	want := time.Duration(float64(n-int(l.burst)) / rate * float64(time.Second))
	if took < want-time.Millisecond || took > want+time.Millisecond {
		t.Errorf("%d bytes at %d B/s took %v, want %v", n, rate, took, want)
	}
}

// A pause is not saved up beyond the burst: after an idle spell the
// rate holds again at once.
func TestLimiterSavesNoMoreThanItsBurst(t *testing.T) {
	const rate = 1 << 20
	l, clk := fakeLimiter(rate)
	c := LimitConn(discardConn{}, l)
	c.Write(make([]byte, 1<<20))
	clk.sleep(time.Hour, nil)
	start := clk.now()
	c.Write(make([]byte, 4<<20))
	took := clk.now().Sub(start)
	want := time.Duration(float64(4<<20-int(l.burst)) / rate * float64(time.Second))
	if took < want-time.Millisecond || took > want+time.Millisecond {
		t.Errorf("4 MiB after an idle hour took %v, want %v", took, want)
	}
}

// Closing a connection lets a write that waits for the rate go, with
// net.ErrClosed.
func TestLimitedWriteEndsOnClose(t *testing.T) {
	l := NewLimiter(MinRate)
	waiting := make(chan struct{})
	var once sync.Once
	l.sleep = func(d time.Duration, stop <-chan struct{}) {
		if d > 0 {
			once.Do(func() { close(waiting) })
			<-stop // no time passes: only the close ends the wait
		}
	}
	c := LimitConn(discardConn{}, l)
	done := make(chan error, 1)
	go func() {
		_, err := c.Write(make([]byte, 1<<20))
		done <- err
	}()
	<-waiting
	c.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after close: %v, want net.ErrClosed", err)
	}
}
