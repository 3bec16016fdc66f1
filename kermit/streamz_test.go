package kermit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"kerf/framing"
	"kerf/kermit"
)

// While streaming, a late answer to a Z is slow, not lost (streaming is
// agreed only on a reliable link), and G-Kermit takes a packet sent
// again while streaming as fatal: so the sender waits its whole timeout
// before it sends a Z again, not its adaptive one. (Seen under load: a
// line emulator fell behind its pace, kerf's Z went again, and G-Kermit
// ended with "Transmission error while streaming".) The receiver here
// is a script that streams and answers the Z 1.2 s late, within the
// 3 s timeout and well past the 200 ms floor of the adaptive one.
func TestStreamingZWaitsTheTimeout(t *testing.T) {
	a, b := link(t, 0, 1)
	cfg := kermit.DefaultConfig()
	cfg.Streaming = true
	cfg.Timeout, cfg.MinTimeout = 3*time.Second, 200*time.Millisecond
	snd := kermit.NewSession(a, cfg)
	t.Cleanup(func() { snd.Close() })

	frame := framing.Frame{Mark: framing.SOH, Check: 1}
	params := framing.DefaultParams()
	params.Capas = framing.CapLong | framing.CapAttrs
	params.MaxLenX = 4000
	params.WhatAmI = framing.WhatValid | framing.WhatStreaming
	var zs atomic.Int32
	go scriptedPeer(b, frame, func(p framing.Packet, write func(framing.Packet)) {
		switch p.Type {
		case 'S':
			write(framing.Packet{Seq: p.Seq, Type: 'Y', Data: params.Marshal()})
		case 'F', 'A', 'B':
			write(framing.Packet{Seq: p.Seq, Type: 'Y'})
		case 'Z':
			if zs.Add(1) == 1 {
				time.Sleep(1200 * time.Millisecond)
			}
			write(framing.Packet{Seq: p.Seq, Type: 'Y'})
		}
	})
	src := t.TempDir()
	out := writeFiles(t, src, []testFile{{"a.bin", randomBytes(20_000, 5)}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := snd.Send(ctx, out); err != nil {
		t.Fatal(err)
	}
	if n := zs.Load(); n != 1 {
		t.Errorf("the Z went %d times, want once", n)
	}
	if st := snd.Stats(); st.Timeouts != 0 {
		t.Errorf("%d timeouts while waiting within the timeout", st.Timeouts)
	}
}
