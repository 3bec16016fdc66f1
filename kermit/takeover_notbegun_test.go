package kermit_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/kermit"
)

// A send over two sessions whose second session is lost at any point,
// however its files stood (done, under way, or taken but their F not
// yet out), ends well: the other takes over what the lost one had not
// finished, and every file is there and reported done. (Found by a review: a file
// taken and lost before its F was reported not begun, not cut off, so
// no one sent it again and the send succeeded without it.)
func TestSendTakeOverAtAnyPoint(t *testing.T) {
	cut := 0
	for m := 1; m < 40; m++ {
		t.Run(fmt.Sprint(m), func(t *testing.T) {
			if sendLostAt(t, m) {
				cut++
			}
		})
	}
	if cut == 0 {
		t.Fatal("no run cut its session: the test tested nothing")
	}
}

// sendLostAt runs the send, session 1 cut at its mth file done, and
// says whether the cut came.
func sendLostAt(t *testing.T, m int) bool {
	src, dst := t.TempDir(), t.TempDir()
	var out []kermit.OutgoingFile
	for j := 0; j < 200; j++ {
		p := filepath.Join(src, fmt.Sprint(j))
		os.WriteFile(p, randomBytes(2000, int64(j)), 0o644)
		fi, _ := os.Stat(p)
		out = append(out, kermit.OutgoingFile{Name: fmt.Sprintf("f%d", j), Size: fi.Size(), ModTime: fi.ModTime(),
			Open: func() (kermit.FileReader, error) { return os.Open(p) }})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	ended := map[string]kermit.Event{}
	events := func(e kermit.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == kermit.FileDone || e.Kind == kermit.FileFailed || e.Kind == kermit.FileSkipped {
			ended[e.Name] = e
		}
	}
	// Session 1's link breaks at its mth file done.
	var cut *cutConn
	senders, wait := sendClients(t, ctx, dst, 2, events, func(i int, a net.Conn, cfg *kermit.Config) net.Conn {
		if i != 1 {
			return a
		}
		cut = &cutConn{Conn: a}
		cut.n.Store(1 << 30)
		n := 0
		cfg.Events = func(e kermit.Event) {
			if e.Kind == kermit.FileDone {
				if n++; n == m {
					cut.n.Store(0)
					cut.Conn.Close()
				}
			}
			events(e)
		}
		return cut
	})
	err := kermit.SendParallel(ctx, senders, out)
	cancel()
	wait()
	if err != nil {
		t.Errorf("SendParallel: %v, want the other session to take the lost one's files over", err)
	}
	for _, f := range out {
		e, ok := ended[f.Name]
		_, serr := os.Stat(filepath.Join(dst, f.Name))
		if !ok || e.Kind != kermit.FileDone || serr != nil {
			t.Errorf("%s: reported %v (%v), on disk: %v", f.Name, e.Kind, e.Err, serr)
		}
	}
	return cut.n.Load() < 0
}
