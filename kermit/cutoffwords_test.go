package kermit_test

import (
	"bufio"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/framing"
	"kerf/kermit"
)

// A file under way when the transfer stops is "not sent whole" (with
// the word on --resume) only if its data had begun to go; one refused
// at its F, as C-Kermit refuses with an E ("Write access denied"), is
// "not sent" (review: the resume words were said of it too).
func TestCutOffWordsSayWhetherDataWent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		failAt byte
		whole  bool
	}{
		{"refused at its F", 'F', false},
		{"stopped in its data", 'D', true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := link(t, 0, 1)
			var mu sync.Mutex
			var why []string
			cfg := kermit.DefaultConfig()
			cfg.Events = func(e kermit.Event) {
				if e.Kind == kermit.FileFailed {
					mu.Lock()
					why = append(why, e.Err.Error())
					mu.Unlock()
				}
			}
			snd := kermit.NewSession(a, cfg)
			defer snd.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan error, 1)
			files := writeFiles(t, t.TempDir(), []testFile{{"f.bin", randomBytes(50000, 1)}})
			go func() { done <- snd.Send(ctx, files) }()
			r := bufio.NewReader(b)
			for stopped := false; !stopped; {
				p := readPacket(t, r)
				switch p.Type {
				case tc.failAt:
					writePacket(t, b, framing.Packet{Seq: p.Seq, Type: 'E', Data: []byte("Write access denied")})
					stopped = true
				case 'S':
					writePacket(t, b, framing.Packet{Seq: p.Seq, Type: 'Y', Data: framing.DefaultParams().Marshal()})
				default:
					writePacket(t, b, framing.Packet{Seq: p.Seq, Type: 'Y'})
				}
			}
			if err := <-done; err == nil {
				t.Fatal("send: no error after the receiver's E")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(why) != 1 {
				t.Fatalf("failures %q, want one for f.bin", why)
			}
			if got := strings.Contains(why[0], "not sent whole"); got != tc.whole || !strings.Contains(why[0], "not sent") {
				t.Errorf("f.bin: %q; want \"not sent whole\" %v", why[0], tc.whole)
			}
		})
	}
}
