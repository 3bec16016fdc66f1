package kermit

import (
	"io"
	"math/bits"
	"net"
	"testing"
	"time"

	"kerf/framing"
)

// addParity sets the 8th bit of each byte of b as parity kind would.
func addParity(b []byte, kind string) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		c &= 0x7f
		ones := bits.OnesCount8(c)
		if kind == "mark" || kind == "even" && ones%2 == 1 || kind == "odd" && ones%2 == 0 {
			c |= 0x80
		}
		out[i] = c
	}
	return out
}

func TestParityOf(t *testing.T) {
	pkt, _ := framing.Frame{Check: 1}.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'S', Data: []byte("~! @-#Y1")})
	for _, kind := range []string{"even", "odd", "mark"} {
		if got := parityOf(addParity(pkt, kind)); got != kind {
			t.Errorf("parityOf(%s) = %q", kind, got)
		}
	}
	if got := parityOf(pkt); got != "" {
		t.Errorf("parityOf(no parity) = %q, want none", got)
	}
	even := addParity(pkt, "even")
	even[2] ^= 0x80 // one byte's parity wrong
	if got := parityOf(even); got != "" {
		t.Errorf("parityOf(even parity with a wrong bit) = %q", got)
	}
	odd := addParity(pkt, "odd")
	odd[5] ^= 0x80 // one byte's parity wrong
	if got := parityOf(odd); got != "" {
		t.Errorf("parityOf(odd parity with a wrong bit) = %q", got)
	}
}

// parityPipe is one end of a pipe that records the parity set on it.
type parityPipe struct {
	net.Conn
	set chan string
}

func (p parityPipe) SetParity(name string) error { p.set <- name; return nil }

// A session that may detect parity reads a peer's packets sent with
// even, odd or mark parity, tells its link, and from then on writes
// with 8th-bit prefixing; one that may not reads them as damage.
func TestSessionDetectsParity(t *testing.T) {
	for _, kind := range []string{"even", "odd", "mark"} {
		for _, detect := range []bool{true, false} {
			a, b := net.Pipe()
			link := parityPipe{a, make(chan string, 1)}
			cfg := DefaultConfig()
			cfg.DetectParity = detect
			s := NewSession(link, cfg)
			s.cfg.Timeout = 200 * time.Millisecond
			go io.Copy(io.Discard, b) // what the session writes
			init := framing.Params{MaxLen: 94, Timeout: 5, EOL: '\r', QCTL: '#', QBIN: '&', Check: 1}
			pkt, _ := framing.Frame{Check: 1}.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'S', Data: init.Marshal()})
			go b.Write(addParity(append(pkt, '\r'), kind))
			p, ok, err := s.read(t.Context(), time.Second)
			switch {
			case err != nil:
				t.Errorf("%s, detect %v: read: %v", kind, detect, err)
			case !detect && ok && !p.bad:
				t.Errorf("%s without detection: got %+v, want nothing or a damaged packet", kind, p)
			case !detect:
			case !ok:
				t.Errorf("%s: no packet read", kind)
			case p.bad || p.Type != 'S' || p.parity != kind:
				t.Errorf("%s: got %+v, want an S with parity %s", kind, p, kind)
			case !s.cfg.Parity:
				t.Errorf("%s: session not 7-bit after the detection", kind)
			}
			if detect {
				select {
				case got := <-link.set:
					if got != kind {
						t.Errorf("link set to %q, want %q", got, kind)
					}
				default:
					t.Errorf("%s: link parity not set", kind)
				}
			}
			s.Close()
			a.Close()
			b.Close()
		}
	}
}

// On a link that cannot apply parity (TCP to a C-Kermit told SET
// PARITY), the session writes the parity it found itself.
func TestSessionWritesParityTheLinkCannot(t *testing.T) {
	for _, kind := range []string{"even", "odd", "mark"} {
		a, b := net.Pipe()
		cfg := DefaultConfig()
		cfg.DetectParity = true
		s := NewSession(a, cfg)
		init := framing.Params{MaxLen: 94, Timeout: 5, EOL: '\r', QCTL: '#', QBIN: '&', Check: 1}
		pkt, _ := framing.Frame{Check: 1}.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'S', Data: init.Marshal()})
		go b.Write(addParity(append(pkt, '\r'), kind))
		if p, ok, err := s.read(t.Context(), time.Second); err != nil || !ok || p.parity != kind {
			t.Fatalf("%s: read %+v, %v, %v; want an S with parity %s", kind, p, ok, err, kind)
		}
		got := make(chan []byte, 1)
		go func() {
			buf := make([]byte, 200)
			n, _ := b.Read(buf)
			got <- buf[:n]
		}()
		if err := s.c.writeRaw([]byte("Y~* @-#Y1~\r")); err != nil {
			t.Fatal(err)
		}
		if err := s.flush(); err != nil {
			t.Fatal(err)
		}
		if w := <-got; parityOf(w) != kind {
			t.Errorf("%s: wrote % x, parity %q", kind, w, parityOf(w))
		}
		s.Close()
		a.Close()
		b.Close()
	}
}
