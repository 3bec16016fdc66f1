package kermit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"kerf/framing"
	"kerf/kermit"
)

// A windowed sender whose lowest packet is lost resends that packet on
// each timeout, as C-Kermit's sender resends winlo (notes §1.10), not
// the others of the window: a receiver such as C-Kermit's holds what
// came after the gap without ACKing it and waits for the gap alone.
// Resending the packet whose timer ran out first went round the window
// instead, and on a noisy line the gap's packet, lost once more, came
// too seldom for the transfer to finish. The receiver here is a script
// that holds out-of-order packets so and drops the first packet of the
// data twice.
func TestTimeoutResendsLowestUnacked(t *testing.T) {
	a, b := link(t, 0, 1)
	cfg := kermit.DefaultConfig()
	cfg.Window, cfg.Streaming, cfg.Attributes = 4, false, false
	cfg.Timeout, cfg.MinTimeout = 200*time.Millisecond, 200*time.Millisecond
	send := kermit.NewSession(a, cfg)
	t.Cleanup(func() { send.Close() })
	frame := framing.Frame{Mark: framing.SOH, Check: 1}
	params := framing.DefaultParams()
	params.Window, params.Capas = 4, framing.CapWindows
	var mu sync.Mutex
	var resentAhead []int // packets resent while the gap was open, other than the gap's
	gap, drops := -1, 0
	next := -1 // the D packet the script waits for
	held := map[int]bool{}
	seen := map[int]bool{}
	go scriptedPeer(b, frame, func(p framing.Packet, write func(framing.Packet)) {
		switch p.Type {
		case 'S':
			write(framing.Packet{Seq: p.Seq, Type: 'Y', Data: params.Marshal()})
		case 'D':
			if next < 0 {
				next, gap = p.Seq, p.Seq
			}
			if p.Seq == gap && drops < 2 {
				drops++
				return // lost on the line
			}
			mu.Lock()
			if seen[p.Seq] && p.Seq != gap && drops < 3 {
				resentAhead = append(resentAhead, p.Seq)
			}
			mu.Unlock()
			seen[p.Seq] = true
			if p.Seq != next {
				held[p.Seq] = true // out of order: held, not ACKed
				return
			}
			if p.Seq == gap {
				drops = 3 // the gap is filled
			}
			for {
				write(framing.Packet{Seq: next, Type: 'Y'})
				delete(held, next)
				next = (next + 1) % 64
				if !held[next] {
					break
				}
			}
		default:
			write(framing.Packet{Seq: p.Seq, Type: 'Y'})
		}
	})
	src := t.TempDir()
	out := writeFiles(t, src, []testFile{{"f.bin", randomBytes(3000, 4)}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := send.Send(ctx, out); err != nil {
		t.Fatalf("send: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(resentAhead) > 0 {
		t.Errorf("packets %v, held by the receiver, were resent while it waited for the lowest one", resentAhead)
	}
}
