package kermit_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// dropper is one end of a line that loses packets of one type and
// sequence number it writes: the first times of them (every one when
// times is 0), as a noisy line may lose a packet and its repeats.
type dropper struct {
	net.Conn
	typ     byte
	seq     int
	seqOf   func() int // if set, the sequence number, asked at each write
	times   int
	mu      sync.Mutex
	dropped int
	sent    map[byte]int // the last sequence number written of each type
}

func (d *dropper) Write(b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]byte, 0, len(b))
	seq := d.seq
	if d.seqOf != nil {
		seq = d.seqOf()
	}
	for i := 0; i < len(b); {
		p, n, ok := parsePacketAnyCheck(b[i:])
		if !ok {
			out = append(out, b[i])
			i++
			continue
		}
		end := i + n
		if end < len(b) && b[end] == '\r' {
			end++ // its end-of-line goes with it
		}
		if d.sent == nil {
			d.sent = map[byte]int{}
		}
		d.sent[p.Type] = p.Seq
		if p.Type == d.typ && p.Seq == seq && (d.times == 0 || d.dropped < d.times) {
			d.dropped++
		} else {
			out = append(out, b[i:end]...)
		}
		i = end
	}
	if _, err := d.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// parsePacketAnyCheck parses the packet at the start of b with whichever
// block check it was sent with (an S and its ACK type 1, then the one
// agreed).
func parsePacketAnyCheck(b []byte) (framing.Packet, int, bool) {
	for _, chk := range []framing.CheckType{3, 1, 2} {
		if p, n, err := (framing.Frame{Mark: framing.SOH, Check: chk}).ParsePacket(b); err == nil {
			return p, n, true
		}
	}
	return framing.Packet{}, 0, false
}

// lastSent is the sequence number of the last packet of type typ
// written through d (-1: none).
func (d *dropper) lastSent(typ byte) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n, ok := d.sent[typ]; ok {
		return n
	}
	return -1
}

func (d *dropper) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dropped
}

// The ACK of a data packet lost for good (and of its repeat) is no
// failure once the receiver has answered the file's Z and the group's
// B: it answers those only after everything before them. The sender
// ends well at once, not after resending the data packet to a receiver
// that had stored the file and gone. (QA: lineem at BER 1e-3, 7 of 20
// runs: the receiver stored the file and exited 0, the sender resent
// for 90 s and exited 4.)
func TestLostDataACKSettledByZ(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"one.bin", randomBytes(500, 3)}})
	a, b := link(t, 0, 0)
	// S 0, F 1, A 2, the one D 3, Z 4, B 5.
	drop := &dropper{Conn: b, typ: 'Y', seq: 3}
	scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	scfg.Timeout, scfg.MinTimeout, scfg.MaxRetries = 200*time.Millisecond, 100*time.Millisecond, 4
	serr, rerr, _ := transfer(t, a, drop, scfg, rcfg, out, dst)
	if rerr != nil {
		t.Fatalf("receive: %v", rerr)
	}
	if serr != nil {
		t.Fatalf("send: %v; the file was stored, its Z and B answered", serr)
	}
	checkFiles(t, dst, []testFile{{"one.bin", randomBytes(500, 3)}})
	if drop.count() == 0 {
		t.Fatal("no ACK of packet 3 was dropped: the test tests nothing")
	}
}

// The B's ACK lost on a line that damaged packets: the receiver, done,
// answers the B's repeat for a while (AnswerLateRepeats), and the
// sender ends well. (QA: lineem at BER 3e-4, the receiver stored the
// file and exited 0, the sender sent the B 21 times and exited 4.)
func TestLostBACKAnsweredLate(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	data := randomBytes(500, 4)
	out := writeFiles(t, src, []testFile{{"one.bin", data}})
	a, b := link(t, 0, 0)
	// The first D lost once (the line is noisy: the receiver asks for
	// it again), the B's first ACK lost.
	lossyData := &dropper{Conn: a, typ: 'D', seq: 3, times: 1}
	lostAck := &dropper{Conn: b, typ: 'Y', seqOf: func() int { return lossyData.lastSent('B') }, times: 1}
	scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	scfg.Timeout, scfg.MinTimeout, scfg.MaxRetries = 300*time.Millisecond, 100*time.Millisecond, 4
	rcfg.Timeout, rcfg.MinTimeout = 300*time.Millisecond, 100*time.Millisecond
	store, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recv, send := kermit.NewSession(lostAck, rcfg), kermit.NewSession(lossyData, scfg)
	defer recv.Close()
	defer send.Close()
	rerr := make(chan error, 1)
	go func() {
		err := recv.Receive(ctx, store)
		if err == nil {
			recv.AnswerLateRepeats(ctx)
		}
		rerr <- err
	}()
	serr := send.Send(ctx, out)
	if err := <-rerr; err != nil {
		t.Fatalf("receive: %v", err)
	}
	if lossyData.count() == 0 || lostAck.count() == 0 {
		t.Fatalf("dropped %d data packets and %d ACKs: the test tests nothing", lossyData.count(), lostAck.count())
	}
	if serr != nil {
		t.Fatalf("send: %v; the receiver stored the file and answered the B", serr)
	}
	checkFiles(t, dst, []testFile{{"one.bin", data}})
}
