package kermit_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/framing"
	"kerf/kermit"
)

// A stop-and-wait receiver NAKs a packet damaged by a burst of noise
// once, though the marks the burst made inside it parse as more damaged
// packets: each NAK has the sender send the packet again and counts as
// its retry (G-Kermit gave up under bursts). A damaged copy that begins
// after an end of line is a new one, and is NAKed again.
func TestStopAndWaitNAKsABurstOnce(t *testing.T) {
	cfg := kermit.DefaultConfig()
	cfg.LineSpeed = 115200
	cfg.Timeout = 5 * time.Second
	b, expect, done, store := stopAndWaitReceiver(t, cfg, 0)

	data := []byte("the quick brown fox jumps over the lazy dog, twice over and more")
	damaged := func(seq int, marks bool) []byte {
		enc, err := framing.Frame{Check: 1}.AppendPacket(nil, framing.Packet{Seq: seq, Type: 'D', Data: data})
		if err != nil {
			t.Fatal(err)
		}
		enc[10] ^= 0x02 // still printable: the check fails
		if marks {
			for _, i := range []int{20, 30, 40, 50} {
				enc[i] = framing.SOH // marks the burst made, no end of line before them
			}
		}
		return append(enc, '\r')
	}
	if _, err := b.Write(damaged(2, true)); err != nil {
		t.Fatal(err)
	}
	expect("D 2 damaged by a burst", 'N', 2)
	writePacket(t, b, framing.Packet{Seq: 2, Type: 'D', Data: data})
	// Answered by its ACK, no second NAK before it.
	expect("D 2 sent again, whole", 'Y', 2)

	if _, err := b.Write(append(damaged(3, false), damaged(3, false)...)); err != nil {
		t.Fatal(err)
	}
	expect("D 3 damaged", 'N', 3)
	// At once, not after this side's timeout (5 s).
	b.SetReadDeadline(time.Now().Add(2 * time.Second))
	expect("D 3 sent again and damaged again", 'N', 3)
	b.SetReadDeadline(time.Time{})
	writePacket(t, b, framing.Packet{Seq: 3, Type: 'D', Data: data})
	expect("D 3 whole", 'Y', 3)

	writePacket(t, b, framing.Packet{Seq: 4, Type: 'Z'})
	expect("Z", 'Y', 4)
	writePacket(t, b, framing.Packet{Seq: 5, Type: 'B'})
	expect("B", 'Y', 5)
	if err := <-done; err != nil {
		t.Fatalf("receive: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(store.Path(), "x.bin")); err != nil || string(got) != string(data)+string(data) {
		t.Errorf("stored %q (%v), want the two packets' data", got, err)
	}
}
