package kermit

import (
	"bytes"
	"context"
	"io/fs"
	"math/rand"
	"net"
	"os"
	"testing"
	"time"

	"kerf/framing"
)

func TestNegotiateKerfPeersMinimalPrefixing(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Unprefix = UnprefixMinimal
	cfg.Reliable = true // TCP: no repeat compression (capas4KeepRepeat)
	mine := myParams(&cfg, false)
	peer, err := framing.ParseParams(mine.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	n := negotiate(&cfg, mine, peer, true)
	if !n.peerKerf {
		t.Fatalf("kerf peer not recognised: %+v", peer)
	}
	src := make([]byte, 256)
	for i := range src {
		src[i] = byte(i)
	}
	enc, used := n.out.Encode(nil, src, 1000)
	if used != 256 || len(enc) != 256+2 {
		t.Errorf("256 byte values encoded to %d bytes (used %d), want 258: only SOH and QCTL prefixed", len(enc), used)
	}
}

// Between kerfs sending binary, repeat compression is off, but where
// both say their link is a line (capas4KeepRepeat): there a run of
// zeros is worth its compression (QA p). Either side on TCP, or a kerf
// from before the bit, turns it off; both sides always agree.
func TestNegotiateRepeatOnLinesOnly(t *testing.T) {
	zeros := make([]byte, 1000)
	for _, c := range []struct {
		name                 string
		reliableA, reliableB bool
		oldB                 bool // B a kerf from before the bit
		want                 bool
	}{
		{"both on lines", false, false, false, true},
		{"one on TCP", false, true, false, false},
		{"both on TCP", true, true, false, false},
		{"the peer from before", false, false, true, false},
	} {
		a, b := DefaultConfig(), DefaultConfig()
		a.Reliable, b.Reliable = c.reliableA, c.reliableB
		pa, pb := myParams(&a, false), myParams(&b, false)
		if c.oldB {
			pb.Capas4 &^= capas4KeepRepeat
		}
		pa.WhatAmI = framing.WhatValid | framing.WhatBinary // a sends, binary
		seenByB, _ := framing.ParseParams(pa.Marshal())
		seenByA, _ := framing.ParseParams(pb.Marshal())
		na, nb := negotiate(&a, pa, seenByA, true), negotiate(&b, pb, seenByB, false)
		if (na.out.REPT != 0) != c.want || na.out.REPT != nb.in.REPT {
			t.Errorf("%s: sender's repeat prefix %q, receiver's %q; want on=%v, the same", c.name, na.out.REPT, nb.in.REPT, c.want)
		}
		enc, _ := na.out.Encode(nil, zeros, 9000)
		if c.want && len(enc) > 100 {
			t.Errorf("%s: 1,000 zeros encoded to %d bytes", c.name, len(enc))
		}
	}
}

func TestMinimalOverheadRandom(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Unprefix = UnprefixMinimal
	mine := myParams(&cfg, false)
	peer, _ := framing.ParseParams(mine.Marshal())
	n := negotiate(&cfg, mine, peer, true)
	src := make([]byte, 1<<20)
	for i := range src {
		src[i] = byte(i * 7919 >> 3)
	}
	total := 0
	for off := 0; off < len(src); {
		enc, used := n.out.Encode(nil, src[off:], 9019)
		total += len(enc)
		off += used
	}
	t.Logf("overhead %.4f", float64(total)/float64(len(src)))
}

func TestWireOverhead(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cfg := DefaultConfig()
	cfg.Unprefix = UnprefixMinimal
	data := make([]byte, 500000)
	rand.New(rand.NewSource(1)).Read(data)
	if b, err := os.ReadFile("/tmp/sr/r5.bin"); err == nil {
		data = b
	}
	recv := NewSession(b, cfg)
	send := NewSession(a, cfg)
	var sizes []int
	go func() { recv.Receive(context.Background(), discardStore{}) }()
	f := OutgoingFile{Name: "x", Size: int64(len(data)), Open: func() (FileReader, error) { return nopCloser{bytes.NewReader(data)}, nil }}
	send.cfg.Events = func(e Event) {}
	if err := send.Send(context.Background(), []OutgoingFile{f}); err != nil {
		t.Fatal(err)
	}
	_ = sizes
	t.Logf("wire %d for %d: %.4f, stats %+v", send.c.written, len(data), float64(send.c.written)/float64(len(data)), send.stats)
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

type discardStore struct{}

func (discardStore) Create(name string) (Incoming, error) { return discardFile{}, nil }

type discardFile struct{}

func (discardFile) WriteAt(b []byte, off int64) (int, error) { return len(b), nil }
func (discardFile) Name() string                             { return "x" }
func (discardFile) Partial() (int64, uint32, error)          { return 0, 0, nil }
func (discardFile) Truncate(int64) error                     { return nil }
func (discardFile) Commit(time.Time, fs.FileMode) error      { return nil }
func (discardFile) Abort(bool) error                         { return nil }

// A classic sender is asked for shorter packets on a serial line than on
// a network link: it keeps the negotiated length however noisy the line.
func TestClassicSenderPacketLength(t *testing.T) {
	for _, tc := range []struct {
		lineSpeed int
		window    int
		want      int
	}{
		{0, 31, classicMaxPacket},
		{115200, 31, classicSerialMaxPacket},
		{115200, 1, classicMaxPacket}, // stop-and-wait: fewer turns of the line
		{9600, 1, 960},                // a second of the line at most
		{1200, 31, 120},
	} {
		a, b := net.Pipe()
		cfg := DefaultConfig()
		cfg.LineSpeed = tc.lineSpeed
		s := NewSession(a, cfg)
		peer := framing.DefaultParams()
		peer.Capas = framing.CapLong | framing.CapAttrs
		if tc.window > 1 {
			peer.Capas |= framing.CapWindows
		}
		peer.MaxLenX = 9024
		peer.Window = tc.window
		done := make(chan error, 1)
		go func() {
			done <- s.answerInit(context.Background(), framing.Packet{Seq: 0, Type: 'S', Data: peer.Marshal()}, false)
			s.flush()
		}()
		buf := make([]byte, 512)
		n, err := b.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		p, _, err := framing.Frame{Mark: framing.SOH, Check: 1}.ParsePacket(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		got, err := framing.ParseParams(p.Data)
		if err != nil {
			t.Fatal(err)
		}
		if got.MaxLenX != tc.want {
			t.Errorf("line speed %d, window %d: asked for %d-byte packets, want %d", tc.lineSpeed, tc.window, got.MaxLenX, tc.want)
		}
		s.Close()
		a.Close()
		b.Close()
	}
}

// Prefixes must differ (KPM): a peer whose control or 8th-bit prefix is
// the repeat prefix gets no repeat counts, said in the ACK of its S,
// rather than its prefixed bytes read as counts (QA: agreed to, then
// "bad prefix encoding" on its first data).
func TestRepeatPrefixOffWhenItClashes(t *testing.T) {
	for _, peer := range []framing.Params{
		{MaxLen: 94, Timeout: 5, EOL: '\r', QCTL: '~', QBIN: 'Y', Check: 1, REPT: '~'},
		{MaxLen: 94, Timeout: 5, EOL: '\r', QCTL: '#', QBIN: '~', Check: 1, REPT: '~'},
	} {
		cfg := DefaultConfig()
		n := negotiate(&cfg, myParams(&cfg, false), peer, true)
		if n.out.REPT != 0 || n.in.REPT != 0 {
			t.Errorf("peer QCTL %q QBIN %q REPT %q: repeat prefix %q/%q agreed, want none", peer.QCTL, peer.QBIN, peer.REPT, n.out.REPT, n.in.REPT)
		}

		// As the receiver: the ACK of the S says no repeat counts.
		a, b := net.Pipe()
		s := NewSession(b, cfg)
		done := make(chan error, 1)
		go func() {
			done <- s.answerInit(context.Background(), framing.Packet{Seq: 0, Type: 'S', Data: peer.Marshal()}, false)
		}()
		buf := make([]byte, 200)
		k, _ := a.Read(buf)
		a.Close()
		<-done
		s.Close()
		f := framing.Frame{Mark: framing.SOH, Check: 1}
		i := bytes.IndexByte(buf[:k], framing.SOH)
		if i < 0 {
			t.Fatalf("no ACK of the S: %q", buf[:k])
		}
		ack, _, err := f.ParsePacket(buf[i:k])
		if err != nil {
			t.Fatalf("ACK of the S %q: %v", buf[i:k], err)
		}
		said, err := framing.ParseParams(ack.Data)
		if err != nil {
			t.Fatal(err)
		}
		if isPrefixChar(said.REPT) {
			t.Errorf("peer QCTL %q QBIN %q: the ACK offered repeat prefix %q", peer.QCTL, peer.QBIN, said.REPT)
		}
	}
}

// A long packet to a peer other than kerf stays, MARK to check, within
// the MAXLX it advertised: G-Kermit reads it into a buffer of that size,
// header and all (QA z: at -e 9000 it overflowed and left without a
// word). A kerf peer takes MAXLX of data and check, as the protocol has
// it.
func TestLongPacketsFitThePeersBuffer(t *testing.T) {
	cfg := DefaultConfig()
	mine := myParams(&cfg, false)
	for _, kerf := range []bool{false, true} {
		peer, err := framing.ParseParams(mine.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		peer.MaxLenX = 9000
		if !kerf {
			peer.Capas2 &^= capas2RawOK
		}
		n := negotiate(&cfg, mine, peer, true)
		if !n.long || n.peerKerf != kerf {
			t.Fatalf("kerf %v: long %v, peerKerf %v", kerf, n.long, n.peerKerf)
		}
		p := framing.Packet{Seq: 1, Type: 'D', Data: make([]byte, n.maxData)}
		b, err := framing.Frame{Check: n.check}.AppendPacket(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		wire := len(b)
		if kerf && n.maxData+n.check.Len() != 9000-2 || !kerf && wire > 9000 {
			t.Errorf("kerf %v: %d bytes of data, %d on the wire; want the whole within 9000 (a kerf peer: its data and check within it)", kerf, n.maxData, wire)
		}
	}
}
