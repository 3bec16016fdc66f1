package kermit_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	"kerf/framing"
	"kerf/kermit"
)

// nakOnceReceiver is a classic receiver with long packets, and sliding
// windows if window > 1, that NAKs the first copy of each packet type in
// nak and each D packet whose number is in nakD. It records the LEN
// field and the data length of each D packet it takes.
func nakOnceReceiver(c net.Conn, window int, nak string, nakD map[int]bool, lens, dataLens *[]int) {
	init := framing.Params{MaxLen: 94, Timeout: 5, EOL: '\r', QCTL: '#', QBIN: 'Y', Check: 1, REPT: ' ',
		Capas: framing.CapLong | framing.CapAttrs, MaxLenX: 9024, Window: window}
	if window > 1 {
		init.Capas |= framing.CapWindows
	}
	naked := map[byte]bool{}
	nD := 0
	answerPackets(c, func(line []byte, p framing.Packet) (framing.Packet, bool) {
		typ, data := byte('Y'), []byte(nil)
		switch {
		case bytes.IndexByte([]byte(nak), p.Type) >= 0 && !naked[p.Type]:
			naked[p.Type], typ = true, 'N'
		case p.Type == 'D':
			nD++
			if nakD[nD] {
				typ = 'N'
				break
			}
			*lens = append(*lens, int(line[1])-32)
			*dataLens = append(*dataLens, len(p.Data))
		case p.Type == 'S':
			data = init.Marshal()
		}
		return framing.Packet{Seq: p.Seq, Type: typ, Data: data}, true
	})
}

// sendTo sends a 20,000-byte file to nakOnceReceiver and returns the
// LEN fields and data lengths of the D packets it took.
func sendTo(t *testing.T, window int, nak string, nakD map[int]bool) (lens, dataLens []int) {
	t.Helper()
	src := t.TempDir()
	out := writeFiles(t, src, []testFile{{"one.bin", randomBytes(20000, 7)}})
	cfg := kermit.DefaultConfig()
	cfg.Timeout, cfg.MinTimeout = 2*time.Second, 50*time.Millisecond
	err := sendToScript(cfg, out, func(c net.Conn) { nakOnceReceiver(c, window, nak, nakD, &lens, &dataLens) })
	if err != nil {
		t.Fatalf("window %d, NAKing %q: send: %v", window, nak, err)
	}
	if len(dataLens) == 0 {
		t.Fatalf("window %d, NAKing %q: no D packet taken", window, nak)
	}
	return lens, dataLens
}

// The first data packet is sized by what the packets before it met: a
// damaged file header or attribute packet (NAKed) on a line of unknown
// quality makes it short, as a packet once sent cannot be made shorter
// (G-Kermit at BER 1e-3: a 256-byte first packet failed its ten tries
// in most runs). On a line that damaged nothing it stays longer.
func TestFirstDataPacketAfterDamage(t *testing.T) {
	const window = 4 // a windowed peer: packets as short as the adapter likes
	_, clean := sendTo(t, window, "", nil)
	for _, nak := range []string{"F", "A"} {
		if _, got := sendTo(t, window, nak, nil); got[0] > 60 || got[0] >= clean[0] {
			t.Errorf("%s NAKed once: first D packet carried %d bytes (clean line: %d); want at most 60", nak, got[0], clean[0])
		}
	}
	if clean[0] < 80 {
		t.Errorf("clean line: first D packet carried only %d bytes", clean[0])
	}
}

// To a stop-and-wait classic receiver (G-Kermit) on a noisy line every
// data packet but a file's last is a short one with a LEN of 66 to 94,
// which no single bit error turns into a control character or a blank:
// G-Kermit, whose read timeout works only once, then waits for bytes
// that never come. On a clean line packets still grow long.
func TestStopAndWaitPacketLengths(t *testing.T) {
	nakD := map[int]bool{}
	for i := 1; i < 400; i += 3 {
		nakD[i] = true // one D packet in three damaged: a very noisy line
	}
	lens, _ := sendTo(t, 1, "FA", nakD)
	for i, l := range lens[:len(lens)-1] {
		if l < 66 || l > 94 {
			t.Errorf("noisy line: D packet %d of %d had LEN %d, want 66..94", i+1, len(lens), l)
		}
	}
	_, clean := sendTo(t, 1, "", nil)
	if biggest := clean[len(clean)/2]; biggest < 200 {
		t.Errorf("clean line: the middle D packet carried %d bytes; want a long packet", biggest)
	}
}
