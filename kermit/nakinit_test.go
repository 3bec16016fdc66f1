package kermit_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"kerf/framing"
	"kerf/kermit"
)

// readPacket reads one packet (up to its CR) from r, with check type 1
// or, failing that, 3 (a sender probing for FORCE-3 alternates them).
func readPacket(t *testing.T, r *bufio.Reader) framing.Packet {
	t.Helper()
	for {
		line, err := r.ReadBytes('\r')
		if err != nil {
			t.Fatalf("reading the sender: %v", err)
		}
		for _, chk := range []framing.CheckType{1, 2, 3} {
			if p, _, err := (framing.Frame{Check: chk}).ParsePacket(line); err == nil {
				return p
			}
		}
	}
}

// writePacket writes p with check type 1 and a CR, as a scripted peer.
func writePacket(t *testing.T, w io.Writer, p framing.Packet) {
	t.Helper()
	b, err := framing.Frame{Check: 1}.AppendPacket(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(append(b, '\r')); err != nil {
		t.Fatal(err)
	}
}

// startSender starts a session with cfg sending files, for a scripted
// receiver: it returns the receiver's end and a reader on it past the
// sender's first packet, its Send-Init. The session ends with t.
func startSender(t *testing.T, cfg kermit.Config, files []testFile) (net.Conn, *bufio.Reader) {
	t.Helper()
	a, b := link(t, 0, 1)
	snd := kermit.NewSession(a, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(func() { cancel(); snd.Close() })
	go snd.Send(ctx, writeFiles(t, t.TempDir(), files))
	r := bufio.NewReader(b)
	if p := readPacket(t, r); p.Type != 'S' || p.Seq != 0 {
		t.Fatalf("first packet %c/%d, want S/0", p.Type, p.Seq)
	}
	return b, r
}

// Without windows a NAK for the next packet means the last one arrived,
// but not for a Send-Init: its ACK carries the receiver's parameters.
// A sender that took the NAK for it went on with defaults the receiver
// did not use (a lost ACK of S; then every "~" was read as a repeat
// count, and the file came out wrong with both sides content). The S
// must be sent again instead.
func TestNAKAfterSendInitIsNoACK(t *testing.T) {
	cfg := kermit.DefaultConfig()
	cfg.Timeout = 30 * time.Second // so that only the NAK can make it resend
	b, r := startSender(t, cfg, []testFile{{"x.bin", []byte("x~~~~~~~~~~y")}})
	writePacket(t, b, framing.Packet{Seq: 1, Type: 'N'})
	if p := readPacket(t, r); p.Type != 'S' || p.Seq != 0 {
		t.Fatalf("after a NAK for packet 1 the sender sent %c/%d; want the S again", p.Type, p.Seq)
	}
	b.Close()
}

// Without windows, an ACK for the packet before the one in flight means
// the peer got a damaged copy of that one (G-Kermit answers damage so):
// the sender resends at once instead of waiting out its timeout.
func TestRepeatedACKIsNAKWithoutWindows(t *testing.T) {
	cfg := kermit.DefaultConfig()
	// So that only the repeated ACK can make it resend: the measured round
	// trip would otherwise bring the timer down to MinTimeout.
	cfg.Timeout, cfg.MinTimeout = 30*time.Second, 30*time.Second
	b, r := startSender(t, cfg, []testFile{{"x.bin", randomBytes(5000, 4)}})
	ack := func(seq int, data []byte) {
		t.Helper()
		writePacket(t, b, framing.Packet{Seq: seq, Type: 'Y', Data: data})
	}
	ack(0, framing.DefaultParams().Marshal()) // window 1, check 1, no attributes
	if p := readPacket(t, r); p.Type != 'F' || p.Seq != 1 {
		t.Fatalf("got %c/%d, want F/1", p.Type, p.Seq)
	}
	ack(1, nil)
	first := readPacket(t, r)
	if first.Seq != 2 {
		t.Fatalf("got %c/%d, want packet 2", first.Type, first.Seq)
	}
	time.Sleep(50 * time.Millisecond) // a round trip later, as a receiver's would be
	ack(1, nil)                       // "packet 2 came damaged"
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	if p := readPacket(t, r); p.Seq != 2 || p.Type != first.Type {
		t.Fatalf("after a repeated ACK of packet 1 the sender sent %c/%d; want packet 2 again", p.Type, p.Seq)
	}
	b.Close()
}

// A stop-and-wait sender stopped within a round trip of a NAK and its
// resend cannot know whether the receiver took the resend: it sends its
// E under both numbers, the packet in flight's and the next, so that a
// receiver waiting on either (G-Kermit drops an E of another number)
// takes it (review 57: numbered for the resend only, it was dropped by
// a receiver that had taken the resend, which waited on to its retry
// limit).
func TestStopAfterNAKAndResendSaysEToBoth(t *testing.T) {
	cfg := kermit.DefaultConfig()
	cfg.Timeout, cfg.MinTimeout = 30*time.Second, 30*time.Second // only the NAK resends
	cfg.LineSpeed = 115200                                       // a line: a classic peer may drop the first E
	a, b := link(t, 0, 1)
	snd := kermit.NewSession(a, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(func() { cancel(); snd.Close() })
	go snd.Send(ctx, writeFiles(t, t.TempDir(), []testFile{{"x.bin", randomBytes(5000, 4)}}))
	r := bufio.NewReader(b)
	if p := readPacket(t, r); p.Type != 'S' || p.Seq != 0 {
		t.Fatalf("first packet %c/%d, want S/0", p.Type, p.Seq)
	}
	writePacket(t, b, framing.Packet{Seq: 0, Type: 'Y', Data: framing.DefaultParams().Marshal()}) // window 1, a classic peer
	if p := readPacket(t, r); p.Type != 'F' || p.Seq != 1 {
		t.Fatalf("got %c/%d, want F/1", p.Type, p.Seq)
	}
	writePacket(t, b, framing.Packet{Seq: 1, Type: 'N'})
	if p := readPacket(t, r); p.Type != 'F' || p.Seq != 1 {
		t.Fatalf("after its NAK got %c/%d, want F/1 again", p.Type, p.Seq)
	}
	cancel() // before the resend is answered
	seqs := map[int]bool{}
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(seqs) < 2 {
		line, err := r.ReadBytes('\r')
		if err != nil {
			t.Fatalf("E packets under numbers %v, then %v; want 1 and 2", seqs, err)
		}
		if p, _, err := (framing.Frame{Check: 1}).ParsePacket(line); err == nil && p.Type == 'E' {
			seqs[p.Seq] = true
		}
	}
	if !seqs[1] || !seqs[2] {
		t.Errorf("E packets under numbers %v, want 1 and 2", seqs)
	}
}
