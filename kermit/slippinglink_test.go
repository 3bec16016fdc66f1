package kermit_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"net"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// slippingConn loses and adds whole characters, as a serial line does
// (a UART overrun drops one; noise on an idle line makes one up): each
// byte written is dropped with probability drop, and a random byte is
// put before it with probability add. Unlike bit errors, these shift
// everything after them, LEN and check included.
type slippingConn struct {
	net.Conn
	mu        sync.Mutex
	rng       *rand.Rand
	drop, add float64
	dropped   int
	// trace, if set, records what this end (name) wrote, what the line
	// made of it, and what it read.
	trace *lineTrace
	name  string
}

func (s *slippingConn) Read(b []byte) (int, error) {
	n, err := s.Conn.Read(b)
	if s.trace != nil {
		s.trace.add(s.name+" read ", b[:n])
	}
	return n, err
}

func (s *slippingConn) Write(b []byte) (int, error) {
	s.mu.Lock()
	c := make([]byte, 0, len(b)+len(b)/64+1)
	for _, x := range b {
		if s.rng.Float64() < s.add {
			c = append(c, byte(s.rng.Intn(256)))
		}
		if s.rng.Float64() < s.drop {
			s.dropped++
			continue
		}
		c = append(c, x)
	}
	s.mu.Unlock()
	if s.trace != nil {
		s.trace.add(s.name+" wrote", b)
		if !bytes.Equal(b, c) {
			s.trace.add(s.name+" line ", c)
		}
	}
	if _, err := s.Conn.Write(c); err != nil {
		return 0, err
	}
	return len(b), nil
}

// A line that loses and adds characters still delivers every file
// whole, windowed or stop-and-wait, long packets included.
func TestSlippingLink(t *testing.T) {
	for _, c := range []struct {
		window, maxPacket int
		rate              float64
	}{
		{31, 9024, 1e-3},
		{1, 9024, 1e-4},
		{31, 94, 1e-3},
	} {
		t.Run(fmt.Sprintf("w%d-p%d-%g", c.window, c.maxPacket, c.rate), func(t *testing.T) {
			files := []testFile{{"random.bin", randomBytes(200_000, 11)}, {"all256.bin", standardFiles()[1].data}}
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, files)
			cfg := kermit.DefaultConfig()
			cfg.Window, cfg.MaxPacket = c.window, c.maxPacket
			cfg.Timeout, cfg.MinTimeout = time.Second, 50*time.Millisecond
			a, b := link(t, 0, 1)
			sa := &slippingConn{Conn: a, rng: rand.New(rand.NewSource(21)), drop: c.rate, add: c.rate}
			sb := &slippingConn{Conn: b, rng: rand.New(rand.NewSource(22)), drop: c.rate, add: c.rate}
			store, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			// The receiver lingers as kerf's serial receive does: the line
			// may lose the ACK of the B after it has ended.
			serr, rerr, st := transferLinger(t, sa, sb, cfg, cfg, out, store, true)
			if serr != nil || rerr != nil {
				t.Fatalf("send: %v, receive: %v (stats %+v)", serr, rerr, st)
			}
			checkFiles(t, dst, files)
			sa.mu.Lock()
			defer sa.mu.Unlock()
			if sa.dropped == 0 || st.Retransmissions == 0 {
				t.Errorf("%d characters dropped, %d packets sent again: the line did not slip", sa.dropped, st.Retransmissions)
			}
		})
	}
}
