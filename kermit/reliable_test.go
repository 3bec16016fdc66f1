package kermit_test

import (
	"bufio"
	"context"
	"testing"
	"time"

	"kerf/framing"
	"kerf/kermit"
)

// On a reliable link (TCP) a peer slower than the timer gets each packet
// once: a second copy would be answered twice, and the second answer
// taken for the reply to the next transaction's packet (a login's ACK
// for the ACK of the Send-Init after it). Timeouts only count towards
// giving up; the receiving side NAKs nothing either.
func TestReliableLinkResendsNothingOnTimeout(t *testing.T) {
	cfg := kermit.DefaultConfig()
	cfg.Reliable = true
	cfg.Timeout, cfg.MinTimeout, cfg.MaxRetries = 100*time.Millisecond, 100*time.Millisecond, 50
	silent := func(t *testing.T, r *bufio.Reader, b interface{ SetReadDeadline(time.Time) error }, d time.Duration, what string) {
		t.Helper()
		b.SetReadDeadline(time.Now().Add(d))
		if line, err := r.ReadBytes('\r'); err == nil {
			t.Fatalf("%s: the session sent %q while waiting; want nothing", what, line)
		}
		b.SetReadDeadline(time.Time{})
	}

	t.Run("sender", func(t *testing.T) {
		b, r := startSender(t, cfg, []testFile{{"x.bin", []byte("x")}})
		// A byte heard from the peer: its first Send-Init is no longer
		// one nothing has answered (TestFirstSendInitUnheardIsSentAgain).
		if _, err := b.Write([]byte("\r")); err != nil {
			t.Fatal(err)
		}
		silent(t, r, b, time.Second, "a sender waiting for the ACK of its S") // ten timer periods
		b.Close()
	})

	t.Run("receiver", func(t *testing.T) {
		a, b := link(t, 0, 1)
		rcv := kermit.NewSession(a, cfg)
		defer rcv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		go rcv.Receive(ctx, nil)
		params := framing.DefaultParams()
		params.Timeout = 1 // second: the receiver's timer
		writePacket(t, b, framing.Packet{Seq: 0, Type: 'S', Data: params.Marshal()})
		r := bufio.NewReader(b)
		if p := readPacket(t, r); p.Type != 'Y' || p.Seq != 0 {
			t.Fatalf("answer %c/%d, want Y/0", p.Type, p.Seq)
		}
		silent(t, r, b, 2500*time.Millisecond, "a receiver waiting for the F") // two timer periods
		b.Close()
	})
}
