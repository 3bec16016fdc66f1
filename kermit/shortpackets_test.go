package kermit_test

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"kerf/framing"
	"kerf/kermit"
)

// A receiver asking for packets shorter than a short packet's 94 (as a
// Kermit or a front end with small buffers does) gets them: every packet the
// sender sends after the Send-Init is at most that long, and none is a
// long packet (a name may still take a short packet's whole length, and
// an attribute the room of the longest), while the files arrive whole,
// their times too.
func TestReceiverAsksForShortPackets(t *testing.T) {
	for _, maxPacket := range []int{kermit.MinPacket, 40, 93} {
		t.Run(strconv.Itoa(maxPacket), func(t *testing.T) {
			files := standardFiles()
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, files)
			a, b := link(t, 0, 1)
			tap := &tappedConn{Conn: a}
			rcfg := kermit.DefaultConfig()
			rcfg.MaxPacket = maxPacket
			serr, rerr, _ := transfer(t, tap, b, kermit.DefaultConfig(), rcfg, out, dst)
			if serr != nil || rerr != nil {
				t.Fatalf("send: %v, receive: %v", serr, rerr)
			}
			checkFiles(t, dst, files)
			data := 0
			for _, p := range tap.packets() {
				switch {
				case p.typ == 'S':
				case p.typ == 'F' && p.len > 0 && p.len <= framing.MaxShortLen:
					// A name may take a whole short packet, as
					// C-Kermit's does (Session.fieldLimit).
				case p.typ == 'A' && p.len > 0 && p.len <= 2+29+3:
					// An attribute is never split: the date to the
					// nanosecond (29 bytes) takes its room
					// (Session.attrRoom).
				case p.len == 0:
					t.Fatalf("a long %c packet, with --packet-length %d", p.typ, maxPacket)
				case p.len > maxPacket:
					t.Fatalf("a %c packet of LEN %d, with --packet-length %d", p.typ, p.len, maxPacket)
				case p.typ == 'D':
					data++
				}
			}
			if data < 300_000/maxPacket {
				t.Errorf("%d D packets seen for over 300 KB", data)
			}
			// The attributes still arrive: the modification time.
			for _, f := range files {
				sent, err1 := os.Stat(filepath.Join(src, f.name))
				got, err2 := os.Stat(filepath.Join(dst, f.name))
				if err1 != nil || err2 != nil || !got.ModTime().Equal(sent.ModTime()) {
					t.Errorf("%s: modification time %v, sent %v (%v, %v)", f.name, got.ModTime(), sent.ModTime(), err1, err2)
				}
			}
		})
	}
}

// tappedConn keeps a copy of what is written to it.
type tappedConn struct {
	net.Conn
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *tappedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(b)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

type wirePacket struct {
	typ byte
	len int // the LEN field; 0 for a long packet
}

// packets lists the packets written, by their headers: the mark is
// always prefixed in data, so each SOH begins one.
func (c *tappedConn) packets() []wirePacket {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []wirePacket
	b := c.out.Bytes()
	for i := 0; i+3 < len(b); i++ {
		if b[i] == framing.SOH {
			out = append(out, wirePacket{typ: b[i+3], len: int(b[i+1]) - 32})
		}
	}
	return out
}
