package kermit_test

import (
	"context"
	"net"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// A classic sender that agreed to attributes but sends none hears a file
// refused at its F (an unsafe name) in the ACK of its first D, X, as a
// Kermit canceling the file says it: it sends its Z with D (discard) and
// goes on (QA: every packet was ACKed empty, and the sender took the
// file for delivered).
func TestRefusedFileWithoutAttributesCanceledAtItsData(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	store, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := kermit.DefaultConfig()
	cfg.Timeout = time.Second
	failed := make(chan string, 4)
	cfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileFailed {
			failed <- e.Name
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rerr := make(chan error, 1)
	go func() { rerr <- kermit.NewSession(b, cfg).Receive(ctx, store) }()

	frame := framing.Frame{Mark: framing.SOH, Check: 1}
	init := framing.Params{MaxLen: 94, Timeout: 5, EOL: '\r', QCTL: '#', QBIN: 'Y', Check: 1, REPT: ' ', Capas: framing.CapAttrs}
	script := []framing.Packet{
		{Seq: 0, Type: 'S', Data: init.Marshal()},
		{Seq: 1, Type: 'F', Data: []byte("../x")},
		{Seq: 2, Type: 'D', Data: []byte("hello")},
		{Seq: 3, Type: 'Z', Data: []byte("D")},
		{Seq: 4, Type: 'B'},
	}
	acks := make(chan framing.Packet, len(script))
	next := 1 // the peer goroutine's alone once it starts
	wire, _ := frame.AppendPacket(nil, script[0])
	go func() {
		a.Write(wire)
		scriptedPeer(a, frame, func(p framing.Packet, write func(framing.Packet)) {
			acks <- p
			if next < len(script) {
				write(script[next])
				next++
			}
		})
	}()
	var dAck framing.Packet
	for range script {
		select {
		case p := <-acks:
			if p.Seq == 2 {
				dAck = p
			}
		case <-ctx.Done():
			t.Fatal("the receiver stopped answering")
		}
	}
	if dAck.Type != 'Y' || string(dAck.Data) != "X" {
		t.Errorf("the D of the refused file was answered %c %q, want Y \"X\" (cancel the file)", dAck.Type, dAck.Data)
	}
	if err := <-rerr; err != nil {
		t.Errorf("receive: %v", err)
	}
	select {
	case name := <-failed:
		if name != "../x" {
			t.Errorf("failed %q, want ../x", name)
		}
	default:
		t.Error("the refused file was not reported failed")
	}
	if n := len(failed); n != 0 {
		t.Errorf("the refused file was reported failed %d more times", n)
	}
}
