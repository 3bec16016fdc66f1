package kermit_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// A stop-and-wait receiver on a line of known speed answers every copy
// of a packet but one sent for its own second answer to the packet
// before (G-Kermit takes a second ACK of its previous packet for a NAK):
// answering that one would have the sender send every packet twice from
// then on. A copy right behind its ACK otherwise (the ACK came damaged)
// and one a while later (the ACK lost) are answered.
func TestStopAndWaitAnswersEachCopyOnce(t *testing.T) {
	cfg := kermit.DefaultConfig()
	cfg.LineSpeed = 115200
	cfg.Timeout = time.Second // tooSoon's bound: half of it
	b, expect, done, store := stopAndWaitReceiver(t, cfg, 1)

	writePacket(t, b, framing.Packet{Seq: 2, Type: 'D', Data: []byte("hello ")})
	expect("D 2", 'Y', 2)
	// A copy at once (its ACK came damaged, and G-Kermit sends again at
	// once): answered.
	writePacket(t, b, framing.Packet{Seq: 2, Type: 'D', Data: []byte("hello ")})
	expect("a copy of D 2 right behind its ACK", 'Y', 2)
	// The sender took that second ACK of 2 for a NAK of 3 and sent 3
	// twice: the second copy is not answered, and the next packet is.
	writePacket(t, b, framing.Packet{Seq: 3, Type: 'D', Data: []byte("wor")})
	expect("D 3", 'Y', 3)
	writePacket(t, b, framing.Packet{Seq: 3, Type: 'D', Data: []byte("wor")})
	writePacket(t, b, framing.Packet{Seq: 4, Type: 'D', Data: []byte("ld")})
	expect("a copy of D 3 sent for the second ACK of D 2, then D 4", 'Y', 4)
	// A copy well after its ACK: the ACK was lost, and is sent again.
	time.Sleep(800 * time.Millisecond)
	writePacket(t, b, framing.Packet{Seq: 4, Type: 'D', Data: []byte("ld")})
	expect("a copy of D 4 after 800 ms", 'Y', 4)

	writePacket(t, b, framing.Packet{Seq: 5, Type: 'Z'})
	expect("Z", 'Y', 5)
	writePacket(t, b, framing.Packet{Seq: 6, Type: 'B'})
	expect("B", 'Y', 6)
	if err := <-done; err != nil {
		t.Fatalf("receive: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(store.Path(), "x.bin")); err != nil || string(got) != "hello world" {
		t.Errorf("stored %q (%v), want each packet's data once", got, err)
	}
}

// stopAndWaitReceiver starts a session with cfg receiving from a
// scripted stop-and-wait sender (as G-Kermit) with block check 1 (its
// Send-Init timeout in seconds: timeout, 0 for the default), past the S
// and the F of x.bin. It returns the sender's end, expect (the next
// answer must be typ/seq), the receive's result and the store.
func stopAndWaitReceiver(t *testing.T, cfg kermit.Config, timeout int) (net.Conn, func(what string, typ byte, seq int), <-chan error, *filestore.Dir) {
	t.Helper()
	a, b := link(t, 0, 1)
	rcv := kermit.NewSession(a, cfg)
	store, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(func() { cancel(); rcv.Close(); store.Close() })
	done := make(chan error, 1)
	go func() { done <- rcv.Receive(ctx, store) }()
	r := bufio.NewReader(b)
	expect := func(what string, typ byte, seq int) {
		t.Helper()
		if p := readPacket(t, r); p.Type != typ || p.Seq != seq {
			t.Fatalf("%s: answer %c/%d, want %c/%d", what, p.Type, p.Seq, typ, seq)
		}
	}
	params := framing.DefaultParams()
	params.Capas &^= framing.CapWindows // stop-and-wait, as G-Kermit
	if timeout > 0 {
		params.Timeout = timeout
	}
	writePacket(t, b, framing.Packet{Seq: 0, Type: 'S', Data: params.Marshal()})
	expect("S", 'Y', 0)
	writePacket(t, b, framing.Packet{Seq: 1, Type: 'F', Data: []byte("x.bin")})
	expect("F", 'Y', 1)
	return b, expect, done, store
}
