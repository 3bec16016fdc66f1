package kermit_test

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/framing"
)

// A long packet that takes longer than the receiver's timeout to cross
// the line (a line slower than its stated speed: 9 KB at 9600 bps is
// 9 s) is not NAKed while its bytes are still coming: they show the
// line is busy, not silent. (QA: NAKed mid-arrival, the sender sent it
// again behind itself.)
func TestLongPacketStillArrivingIsNotNAKed(t *testing.T) {
	dst := t.TempDir()
	data := bytes.Repeat([]byte("0123456789"), 150) // 1,500 bytes, a long packet
	var mu sync.Mutex
	var replies []framing.Packet
	err := receiveClassic(t, dst, func(a net.Conn) {
		got := make(chan framing.Packet, 64)
		go func() {
			r := bufio.NewReader(a)
			for {
				line, err := r.ReadBytes('\r')
				if err != nil {
					close(got)
					return
				}
				if p, _, err := (framing.Frame{Check: 1}).ParsePacket(line); err == nil {
					mu.Lock()
					replies = append(replies, p)
					mu.Unlock()
					got <- p
				}
			}
		}()
		next := func(seq int) {
			t.Helper()
			for p := range got {
				if p.Seq == seq && p.Type == 'Y' {
					return
				}
				if p.Type == 'N' {
					t.Fatalf("NAK %d while waiting for the ACK of %d", p.Seq, seq)
				}
			}
			t.Fatalf("link closed waiting for the ACK of %d", seq)
		}
		init := framing.DefaultParams()
		init.Timeout = 1 // the receiver's timer: a second
		init.Capas |= framing.CapLong
		init.MaxLenX = 9024
		writePacket(t, a, framing.Packet{Seq: 0, Type: 'S', Data: init.Marshal()})
		next(0)
		writePacket(t, a, framing.Packet{Seq: 1, Type: 'F', Data: []byte("slow.bin")})
		next(1)
		wire, err := framing.Frame{Check: 1}.AppendPacket(nil, framing.Packet{Seq: 2, Type: 'D', Data: data})
		if err != nil {
			t.Fatal(err)
		}
		wire = append(wire, '\r')
		// Three seconds on the line, three of the receiver's timeouts.
		for i := 0; i < len(wire); i += 10 {
			if _, err := a.Write(wire[i:min(i+10, len(wire))]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		next(2)
		writePacket(t, a, framing.Packet{Seq: 3, Type: 'Z'})
		next(3)
		writePacket(t, a, framing.Packet{Seq: 4, Type: 'B'})
		next(4)
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "slow.bin")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("slow.bin: %d bytes, %v", len(b), err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range replies {
		if p.Type == 'N' {
			t.Errorf("a NAK (%d) while the packet came", p.Seq)
		}
	}
}
