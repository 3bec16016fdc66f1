package kermit_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// When the ACK of the Send-Init is lost, the receiver, which agreed type
// 3, asks for packet 1 with a type-3 NAK after its timeout; the sender
// sends its S again at once on that NAK rather than after its own
// timeouts (a slipping line: 15 s before the first file, the S and its
// type-3 try each waiting out a doubled timeout). The sender's timeout
// here is longer than the test allows: only the NAK can have the S go
// again in time.
func TestLostInitAckNAKedAfter(t *testing.T) {
	src := t.TempDir()
	out := writeFiles(t, src, []testFile{{"one.bin", randomBytes(500, 7)}})
	cfg := kermit.DefaultConfig()
	cfg.Window = 1
	cfg.Timeout, cfg.MinTimeout = time.Minute, time.Minute
	got := map[byte]int{}
	err := sendToScript(cfg, out, func(c net.Conn) { lossyInitReceiver(t, c, got, false) })
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if got['S'] != 2 || got['Z'] != 1 || got['B'] != 1 {
		t.Errorf("the receiver saw %v: want the S twice (its first ACK lost), then the file and the B", got)
	}
}

// The ACK of the Send-Init arrives damaged: the sender sends its S again
// at once, as the Kermit sender does on a damaged answer, not after its
// timeout (which here is longer than the test allows).
func TestDamagedInitAckResent(t *testing.T) {
	src := t.TempDir()
	out := writeFiles(t, src, []testFile{{"one.bin", randomBytes(500, 8)}})
	cfg := kermit.DefaultConfig()
	cfg.Window = 1
	cfg.Timeout, cfg.MinTimeout = time.Minute, time.Minute
	got := map[byte]int{}
	err := sendToScript(cfg, out, func(c net.Conn) { lossyInitReceiver(t, c, got, true) })
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if got['S'] != 2 || got['Z'] != 1 || got['B'] != 1 {
		t.Errorf("the receiver saw %v: want the S twice (its first ACK damaged), then the file and the B", got)
	}
}

// lossyInitReceiver plays a receiver whose ACK of the first S was lost:
// to it, the S was answered (type 3 agreed), so it NAKs packet 1 with
// type 3 (or, if damaged, the sender gets that ACK with a wrong check);
// it ACKs the S sent again (type 1, as an S is) and everything after
// with type 3, to the B.
func lossyInitReceiver(t *testing.T, c net.Conn, got map[byte]int, damaged bool) {
	init := framing.Params{MaxLen: 94, Timeout: 5, EOL: '\r', QCTL: '#', QBIN: 'Y', Check: 3, REPT: ' '}
	f1, f3 := framing.Frame{Mark: framing.SOH, Check: 1}, framing.Frame{Mark: framing.SOH, Check: 3}
	write := func(f framing.Frame, p framing.Packet) bool {
		b, err := f.AppendPacket(nil, p)
		if err != nil {
			t.Error(err)
			return false
		}
		_, err = c.Write(append(b, '\r'))
		return err == nil
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadBytes('\r')
		if err != nil {
			return
		}
		i := bytes.IndexByte(line, framing.SOH)
		if i < 0 {
			continue
		}
		p, _, err := f1.ParsePacket(line[i:])
		if err != nil || p.Type != 'S' {
			if p, _, err = f3.ParsePacket(line[i:]); err != nil {
				continue // the sender's type-3 try of its S
			}
		}
		got[p.Type]++
		switch {
		case p.Type == 'S' && got['S'] == 1 && damaged:
			b, _ := f1.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'Y', Data: init.Marshal()})
			b[len(b)-1] ^= 1 // the check's last character
			if _, err := c.Write(append(b, '\r')); err != nil {
				return
			}
		case p.Type == 'S' && got['S'] == 1:
			if !write(f3, framing.Packet{Seq: 1, Type: 'N'}) {
				return
			}
		case p.Type == 'S':
			if !write(f1, framing.Packet{Seq: 0, Type: 'Y', Data: init.Marshal()}) {
				return
			}
		default:
			if !write(f3, framing.Packet{Seq: p.Seq, Type: 'Y'}) || p.Type == 'B' {
				return
			}
		}
	}
}

// A kerf receiver waiting for its S answers the sender's type-3 try of
// it (which a kerf sender alternates with the type-1 S, for a peer that
// forces type 3) as it would the S: with its type-1 ACK. And it NAKs a
// damaged packet then (most likely the S) with NAK 0, as the Kermit
// receiver does. Before, both went unanswered, each costing a sender's
// timeout, doubled each time (15 s to start on a slipping line).
func TestReceiverAnswersInitTries(t *testing.T) {
	sinit := framing.Params{MaxLen: 94, Timeout: 5, EOL: '\r', QCTL: '#', QBIN: 'Y', Check: 3, REPT: ' '}.Marshal()
	f1, f3 := framing.Frame{Mark: framing.SOH, Check: 1}, framing.Frame{Mark: framing.SOH, Check: 3}
	s3, err := f3.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'S', Data: sinit})
	if err != nil {
		t.Fatal(err)
	}
	damaged, err := f1.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'S', Data: sinit})
	if err != nil {
		t.Fatal(err)
	}
	damaged[4] ^= 0x01 // in the data
	for _, tc := range []struct {
		name  string
		send  []byte
		want  byte
		check framing.Frame
	}{
		{"type-3 try of the S", s3, 'Y', f1},
		{"damaged S", damaged, 'N', f1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			cfg := kermit.DefaultConfig()
			cfg.Timeout = time.Minute
			recv := kermit.NewSession(b, cfg)
			defer recv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			store, err := filestore.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			go func() { recv.Receive(ctx, store); close(done) }()
			a.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := a.Write(append(tc.send, '\r')); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(a).ReadBytes('\r')
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			p, _, err := tc.check.ParsePacket(line[bytes.IndexByte(line, framing.SOH):])
			if err != nil || p.Type != tc.want || p.Seq != 0 {
				t.Errorf("answered %q (%v), want %c of 0", line, err, tc.want)
			}
			cancel()
			a.Close()
			<-done
		})
	}
}
