package kermit_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	"kerf/kermit"
)

// flushingPeer drops what comes before the first packet's end, as a
// C-Kermit that accepted a TCP connection and then began RECEIVE
// flushes its input.
type flushingPeer struct {
	net.Conn
	flushed bool
	rest    []byte
}

func (f *flushingPeer) Read(p []byte) (int, error) {
	for !f.flushed {
		buf := make([]byte, 4096)
		n, err := f.Conn.Read(buf)
		if i := bytes.IndexByte(buf[:n], '\r'); i >= 0 {
			f.flushed, f.rest = true, buf[i+1:n]
		}
		if err != nil {
			return 0, err
		}
	}
	if len(f.rest) > 0 {
		n := copy(p, f.rest)
		f.rest = f.rest[n:]
		return n, nil
	}
	return f.Conn.Read(p)
}

// Over TCP (Reliable) nothing is sent again on a timeout, but a first
// Send-Init that nothing has answered, not a byte, is: a peer that
// flushed it waits for it while this side waited for its answer (QA
// ae: 8 s each time, until C-Kermit's NAK; here the receiver never
// NAKs, and without the resend the transfer does not end).
func TestFirstSendInitUnheardIsSentAgain(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, standardFiles())
	a, b := link(t, 0, 1)
	scfg := kermit.DefaultConfig()
	scfg.Reliable, scfg.Timeout, scfg.MinTimeout = true, 20*time.Second, 20*time.Second
	rcfg := scfg
	rcfg.Timeout, rcfg.MinTimeout = 10*time.Minute, 10*time.Minute // no NAK
	serr, rerr, st := transfer(t, a, &flushingPeer{Conn: b}, scfg, rcfg, out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send: %v, receive: %v", serr, rerr)
	}
	checkFiles(t, dst, standardFiles())
	if st.Retransmissions == 0 {
		t.Error("no packet was sent again, yet the first was flushed")
	}
}
