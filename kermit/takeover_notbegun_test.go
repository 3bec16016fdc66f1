package kermit_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// fConn fails every write once fired (its close ends the reads).
type fConn struct {
	net.Conn
	fired atomic.Bool
}

func (c *fConn) Write(p []byte) (int, error) {
	if c.fired.Load() {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

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
	var senders []*kermit.Session
	var wg sync.WaitGroup
	var fc *fConn
	for i := 0; i < 2; i++ {
		scfg := kermit.DefaultConfig()
		scfg.Events = events
		a, b := link(t, 0, 1)
		da, db := dualPair(t)
		scfg.Dual = da
		rcfg := kermit.DefaultConfig()
		rcfg.Dual = db
		scfg.Streaming, rcfg.Streaming = true, true
		if i == 1 {
			fc = &fConn{Conn: a}
			a = fc
			n := 0
			scfg.Events = func(e kermit.Event) {
				if e.Kind == kermit.FileDone {
					if n++; n == m {
						fc.fired.Store(true)
						fc.Conn.Close()
					}
				}
				events(e)
			}
		}
		send, recv := kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
		t.Cleanup(func() { send.Close(); recv.Close() })
		senders = append(senders, send)
		store, err := filestore.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for recv.Receive(ctx, store) == nil {
			}
		}()
	}
	err := kermit.SendParallel(ctx, senders, out)
	cancel()
	wg.Wait()
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
	return fc.fired.Load()
}
