package kermit_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"kerf/framing"
	"kerf/kermit"
)

// A receiver whose A answers name a recovery point past the file's end
// gets the file restarted once at most: a point this send did not ask
// for (no R in its A) fails the file, a protocol error, instead of
// restarting it for ever (QA: 20,000 rounds, a file descriptor held
// each, until the sender ran out). Without --resume no restart at all.
func TestUnaskedRecoveryPointFailsTheFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		resume bool
		wantF  int32 // F packets the receiver sees
	}{
		{"no resume", false, 1},
		{"resume", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			frame := framing.Frame{Mark: framing.SOH, Check: 1}
			init := framing.Params{MaxLen: 94, Timeout: 5, EOL: '\r', QCTL: '#', QBIN: 'Y', Check: 1, REPT: ' ', Capas: framing.CapAttrs | framing.CapResend}
			var fs atomic.Int32
			past := framing.AttrReply{Accept: true, ResumeAt: 1_000_000_000}.Marshal()
			go scriptedPeer(a, frame, func(p framing.Packet, write func(framing.Packet)) {
				switch p.Type {
				case 'S':
					write(framing.Packet{Seq: p.Seq, Type: 'Y', Data: init.Marshal()})
				case 'F':
					fs.Add(1)
					write(framing.Packet{Seq: p.Seq, Type: 'Y'})
				case 'A':
					write(framing.Packet{Seq: p.Seq, Type: 'Y', Data: past})
				default:
					write(framing.Packet{Seq: p.Seq, Type: 'Y'})
				}
			})
			cfg := kermit.DefaultConfig()
			cfg.Timeout = time.Second
			cfg.Resume = tc.resume
			var failed []error
			cfg.Events = func(e kermit.Event) {
				if e.Kind == kermit.FileFailed {
					failed = append(failed, e.Err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			data := bytes.Repeat([]byte("x"), 2000)
			f := kermit.OutgoingFile{Name: "src.txt", Size: int64(len(data)), ModTime: time.Now(),
				Open: func() (kermit.FileReader, error) { return nopCloser{bytes.NewReader(data)}, nil }}
			err := kermit.NewSession(b, cfg).Send(ctx, []kermit.OutgoingFile{f})
			if err == nil || ctx.Err() != nil {
				t.Fatalf("send: %v (context: %v); want the file failed", err, ctx.Err())
			}
			if n := fs.Load(); n != tc.wantF {
				t.Errorf("the receiver saw %d F packets, want %d", n, tc.wantF)
			}
			if len(failed) != 1 || !errors.Is(failed[0], kermit.ErrProtocol) || !strings.Contains(failed[0].Error(), "did not ask for") {
				t.Errorf("failures %v; want one protocol error naming the unasked recovery", failed)
			}
		})
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
