package kermit_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"strings"
	"testing"
	"time"

	"kerf/framing"
	"kerf/kermit"
)

// classicReceiver is a minimal classic Kermit receiver (no attributes,
// windows or long packets, type-1 checks): it answers every packet but
// the types in silent, and counts what it got of each type.
func classicReceiver(c net.Conn, silent string, got map[byte]int) {
	init := framing.Params{MaxLen: 94, Timeout: 1, EOL: '\r', QCTL: '#', QBIN: 'Y', Check: 1, REPT: ' '}
	answerPackets(c, func(_ []byte, p framing.Packet) (framing.Packet, bool) {
		got[p.Type]++
		if bytes.IndexByte([]byte(silent), p.Type) >= 0 {
			return framing.Packet{}, false
		}
		var data []byte
		if p.Type == 'S' {
			data = init.Marshal()
		}
		return framing.Packet{Seq: p.Seq, Type: 'Y', Data: data}, true
	})
}

// answerPackets reads type-1-checked packets from c, each ending in CR,
// and writes what answer makes of each (nothing if it says false), until
// c fails or a B has been answered. answer gets the packet's line from
// its mark on.
func answerPackets(c net.Conn, answer func(line []byte, p framing.Packet) (framing.Packet, bool)) {
	f := framing.Frame{Mark: framing.SOH, Check: 1}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadBytes('\r')
		if err != nil {
			return
		}
		i := bytes.IndexByte(line, framing.SOH)
		if i < 0 {
			continue
		}
		p, _, err := f.ParsePacket(line[i:])
		if err != nil {
			continue
		}
		reply, ok := answer(line[i:], p)
		if !ok {
			continue
		}
		out, _ := f.AppendPacket(nil, reply)
		if _, err := c.Write(append(out, '\r')); err != nil {
			return
		}
		if p.Type == 'B' {
			return
		}
	}
}

// A classic receiver confirms each file with its Z's ACK; when only its
// ACK of the B never comes (lost on a noisy line after it left: QA,
// C-Kermit at BER 1e-3 had the file whole and exited 0, kerf exited 4
// after 21 tries of the B), the files are sent and the send ends well.
// A file whose Z is not answered still fails the send.
func TestUnansweredBAfterConfirmedFiles(t *testing.T) {
	for _, tc := range []struct {
		silent string
		ok     bool
	}{
		{"B", true},
		{"ZB", false},
	} {
		src := t.TempDir()
		out := writeFiles(t, src, []testFile{{"one.bin", randomBytes(300, 5)}, {"two.bin", randomBytes(200, 6)}})
		got := map[byte]int{}
		cfg := kermit.DefaultConfig()
		cfg.Timeout, cfg.MinTimeout, cfg.MaxRetries = 100*time.Millisecond, 50*time.Millisecond, 2
		var saw []kermit.Event
		cfg.Events = func(e kermit.Event) { saw = append(saw, e) }
		err := sendToScript(cfg, out, func(c net.Conn) { classicReceiver(c, tc.silent, got) })
		if tc.ok {
			if err != nil {
				t.Errorf("silent %s: send: %v; every file's Z was answered", tc.silent, err)
			}
			if got['B'] < 2 {
				t.Errorf("silent %s: the B went %d times: not retried, the test tests nothing", tc.silent, got['B'])
			}
			done := 0
			for _, e := range saw {
				if e.Kind == kermit.FileDone {
					done++
				}
			}
			if done != 2 {
				t.Errorf("silent %s: %d files reported done, want 2", tc.silent, done)
			}
			continue
		}
		if !errors.Is(err, kermit.ErrTooManyRetries) {
			t.Errorf("silent %s: send returned %v, want too many retries: a file was not confirmed", tc.silent, err)
		}
	}
}

// sendToScript sends out over a pipe to receiver, a scripted peer, and
// returns once both are done; what the receiver writes after it returns
// is read and dropped.
func sendToScript(cfg kermit.Config, out []kermit.OutgoingFile, receiver func(net.Conn)) error {
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() { receiver(b); close(done) }()
	go func() { <-done; bytesDiscard(b) }()
	s := kermit.NewSession(a, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := s.Send(ctx, out)
	cancel()
	s.Close()
	a.Close()
	<-done
	return err
}

func bytesDiscard(c net.Conn) {
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// A sender whose timer is shorter than the peer's TIME (the adaptive
// one starts at MinTimeout) sends again as soon as it runs out, but
// gives the peer up only after MaxRetries of its TIMEs of silence (QA:
// a peer that asked for 5 s was dropped after 3 s in all, --retries 3).
func TestSilentPeerGivenItsTime(t *testing.T) {
	src := t.TempDir()
	out := writeFiles(t, src, []testFile{{"one.bin", randomBytes(300, 7)}})
	got := map[byte]int{}
	cfg := kermit.DefaultConfig()
	cfg.Timeout, cfg.MinTimeout, cfg.MaxRetries = 100*time.Millisecond, 50*time.Millisecond, 2
	start := time.Now()
	err := sendToScript(cfg, out, func(c net.Conn) { classicReceiver(c, "Z", got) }) // its TIME is 1 s
	took := time.Since(start)
	if !errors.Is(err, kermit.ErrTooManyRetries) {
		t.Fatalf("send: %v, want too many retries", err)
	}
	if took < 2*time.Second {
		t.Errorf("gave up after %v of silence, less than MaxRetries (2) times the peer's TIME (1 s)", took)
	}
	if got['Z'] <= cfg.MaxRetries+1 {
		t.Errorf("the Z went %d times: the adaptive timer did not send it again sooner than TIME", got['Z'])
	}
}

// A group of which nothing went ends, to a classic receiver, with an E
// of the reason when its files failed here (QA z: an unreadable file's
// GET gave C-Kermit an empty group and no reason), and with its B as
// ever when the receiver refused the only file itself (review 50: it
// got an E with kerf's words for its own refusal).
func TestClassicGroupOfNothingSaysWhy(t *testing.T) {
	init := framing.Params{MaxLen: 94, Timeout: 1, EOL: '\r', QCTL: '#', QBIN: 'Y', Check: 1, REPT: ' ', Capas: framing.CapAttrs}
	for _, tc := range []struct {
		name    string
		open    bool // the file opens
		wantE   bool
		eSaying string
	}{
		{"unreadable here", false, true, "permission denied"},
		{"refused there", true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := kermit.OutgoingFile{Name: "only.bin", Size: 3, ModTime: time.Unix(1e9, 0), Open: func() (kermit.FileReader, error) {
				return nil, &fs.PathError{Op: "open", Path: "only.bin", Err: fs.ErrPermission}
			}}
			if tc.open {
				f = writeFiles(t, t.TempDir(), []testFile{{"only.bin", []byte("abc")}})[0]
			}
			got := map[byte]int{}
			var eText string
			cfg := kermit.DefaultConfig()
			cfg.Timeout, cfg.MinTimeout, cfg.MaxRetries = 200*time.Millisecond, 50*time.Millisecond, 2
			err := sendToScript(cfg, []kermit.OutgoingFile{f}, func(c net.Conn) {
				answerPackets(c, func(_ []byte, p framing.Packet) (framing.Packet, bool) {
					got[p.Type]++
					switch p.Type {
					case 'S':
						return framing.Packet{Seq: p.Seq, Type: 'Y', Data: init.Marshal()}, true
					case 'A':
						return framing.Packet{Seq: p.Seq, Type: 'Y', Data: []byte("N+")}, true
					case 'E':
						eText = string(p.Data)
						return framing.Packet{}, false
					}
					return framing.Packet{Seq: p.Seq, Type: 'Y'}, true
				})
			})
			if err == nil {
				t.Fatal("send of a file that did not go succeeded")
			}
			if tc.wantE && (got['E'] != 1 || got['B'] != 0 || !strings.Contains(eText, tc.eSaying)) {
				t.Errorf("the receiver got %v, E %q; want an E saying %q, no B", got, eText, tc.eSaying)
			}
			if !tc.wantE && (got['E'] != 0 || got['B'] != 1 || got['A'] == 0) {
				t.Errorf("the receiver got %v; want its refusal of the A, then a B and no E", got)
			}
		})
	}
}
