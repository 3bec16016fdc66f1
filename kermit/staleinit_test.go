package kermit_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// A GET whose I went twice (its ACK came late) is answered by the R's
// own answer, not by the late second ACK of the I, which carries the
// sequence number (0) of the R too: against C-Kermit's server on a slow
// serial line kerf failed with "server answered GET with 'Y'". The
// server here is a script: it answers each I, the first one late, and
// the R with E.
func TestGetAfterResentInit(t *testing.T) {
	a, b := link(t, 0, 1)
	ccfg := kermit.DefaultConfig()
	ccfg.Timeout, ccfg.MinTimeout = 300*time.Millisecond, 300*time.Millisecond
	cli := kermit.NewSession(a, ccfg)
	t.Cleanup(func() { cli.Close() })
	frame := framing.Frame{Mark: framing.SOH, Check: 1}
	params := framing.DefaultParams().Marshal()
	answered := 0
	go scriptedPeer(b, frame, func(p framing.Packet, write func(framing.Packet)) {
		switch p.Type {
		case 'I':
			// The first answer late (the client times out and sends I
			// again), the second after the client went on to the R.
			answered++
			time.Sleep(map[int]time.Duration{1: 700 * time.Millisecond, 2: 150 * time.Millisecond}[answered])
			write(framing.Packet{Seq: p.Seq, Type: 'Y', Data: params})
		case 'R':
			write(framing.Packet{Seq: p.Seq, Type: 'E', Data: []byte("no such file: f.bin")})
		}
	})
	dst := t.TempDir()
	store, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = cli.GetWith(ctx, "f.bin", kermit.GetOptions{}, store)
	var pe *kermit.PeerError
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "no such file") {
		t.Fatalf("GET after a resent I: %v; want the server's answer to it (E: no such file)", err)
	}
	if st := cli.Stats(); st.Timeouts == 0 {
		t.Error("the I was not resent: the test tested nothing")
	}
}

// scriptedPeer reads packets from c, written with frame (or check type
// 3, as kerf's second try of an I goes), and hands each to handle, whose
// write answers with frame; it returns when c does.
func scriptedPeer(c net.Conn, frame framing.Frame, handle func(p framing.Packet, write func(framing.Packet))) {
	write := func(p framing.Packet) {
		wire, _ := frame.AppendPacket(nil, p)
		c.Write(wire)
	}
	var buf []byte
	tmp := make([]byte, 4096)
	for {
		p, n, err := frame.ParsePacket(buf)
		if err != nil && !errors.Is(err, framing.ErrIncomplete) {
			if p3, n3, err3 := (framing.Frame{Mark: frame.Mark, Check: 3}).ParsePacket(buf); err3 == nil {
				p, n, err = p3, n3, nil
			}
		}
		if errors.Is(err, framing.ErrIncomplete) {
			m, rerr := c.Read(tmp)
			if rerr != nil {
				return
			}
			buf = append(buf, tmp[:m]...)
			continue
		}
		buf = buf[n:]
		if err != nil {
			continue // the EOL between packets, say
		}
		handle(p, write)
	}
}
