package kermit

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"kerf/framing"
)

// A session whose data connections were lost waits for its peer to say
// more only while the peer speaks: silent for dataLossGrace, the session
// counts itself lost (QA: a send's sessions and their server each
// waited on the other, for the minute of the take-over).
func TestDataLossThenSilenceEndsTheWait(t *testing.T) {
	saved := dataLossGrace
	dataLossGrace = time.Second
	defer func() { dataLossGrace = saved }()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	s := NewSession(a, DefaultConfig())
	defer s.Close()
	s.data = newFailingPath(0) // lost at once, no cause of this side's
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The peer speaks for a while: each packet is heard, no error.
	frame := framing.Frame{Mark: framing.SOH, Check: 1}
	wire, _ := frame.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'N'})
	go func() {
		for range 4 {
			time.Sleep(100 * time.Millisecond)
			b.Write(wire)
		}
	}()
	for i := range 4 {
		if _, ok, err := s.readWatching(ctx, 0, watchAll); err != nil || !ok {
			t.Fatalf("read %d while the peer speaks: ok %v, %v", i+1, ok, err)
		}
	}
	// Then it falls silent.
	_, _, err := s.readWatching(ctx, 0, watchAll)
	var de *DataPathError
	if !errors.As(err, &de) || !errors.Is(err, errDataLostSilence) {
		t.Fatalf("a silent peer after the data path was lost: %v, want the silence's DataPathError", err)
	}
}
