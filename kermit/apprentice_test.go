package kermit_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// A stop-and-wait receiver on a line of known speed answers each copy
// of a packet that its sender's timer could have sent, and no other: a
// copy right behind its ACK (sent for a second NAK, or a second ACK
// taken for a NAK, as G-Kermit takes one) is not answered again, since
// answering it would have the sender send every packet twice from then
// on; a copy a while later (its ACK lost) is. And damage read right
// behind a NAK (one burst of noise read as two packets) is not NAKed
// again: the NAK sent brings the copy.
func TestStopAndWaitAnswersEachCopyOnce(t *testing.T) {
	cfg := kermit.DefaultConfig()
	cfg.LineSpeed = 115200
	cfg.Timeout = time.Second // tooSoon's bound: half of it
	a, b := link(t, 0, 1)
	rcv := kermit.NewSession(a, cfg)
	defer rcv.Close()
	store, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
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
	params.Timeout = 1
	writePacket(t, b, framing.Packet{Seq: 0, Type: 'S', Data: params.Marshal()})
	expect("S", 'Y', 0)
	writePacket(t, b, framing.Packet{Seq: 1, Type: 'F', Data: []byte("x.bin")})
	expect("F", 'Y', 1)

	writePacket(t, b, framing.Packet{Seq: 2, Type: 'D', Data: []byte("hello ")})
	expect("D 2", 'Y', 2)
	// A copy at once, then the next packet: only the next is answered.
	writePacket(t, b, framing.Packet{Seq: 2, Type: 'D', Data: []byte("hello ")})
	writePacket(t, b, framing.Packet{Seq: 3, Type: 'D', Data: []byte("world")})
	expect("a copy of D 2 right behind its ACK, then D 3", 'Y', 3)
	// A copy well after its ACK: the ACK was lost, and is sent again.
	time.Sleep(800 * time.Millisecond)
	writePacket(t, b, framing.Packet{Seq: 3, Type: 'D', Data: []byte("world")})
	expect("a copy of D 3 after 800 ms", 'Y', 3)

	// Two damaged packets in one burst: one NAK.
	good, err := framing.Frame{Check: 1}.AppendPacket(nil, framing.Packet{Seq: 4, Type: 'D', Data: []byte("!!!!!!")})
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)-3] ^= 0x04 // a data character: the check fails
	burst := append(append(append(append([]byte(nil), bad...), '\r'), bad...), '\r')
	if _, err := b.Write(burst); err != nil {
		t.Fatal(err)
	}
	expect("two damaged copies of D 4", 'N', 4)
	writePacket(t, b, framing.Packet{Seq: 4, Type: 'D', Data: []byte("!!!!!!")})
	expect("D 4 after its one NAK", 'Y', 4)
	writePacket(t, b, framing.Packet{Seq: 5, Type: 'Z'})
	expect("Z", 'Y', 5)
	writePacket(t, b, framing.Packet{Seq: 6, Type: 'B'})
	expect("B", 'Y', 6)
	if err := <-done; err != nil {
		t.Fatalf("receive: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(store.Path(), "x.bin")); err != nil || string(got) != "hello world!!!!!!" {
		t.Errorf("stored %q (%v), want each packet's data once", got, err)
	}
}
