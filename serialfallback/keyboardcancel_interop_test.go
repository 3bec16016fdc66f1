package serialfallback_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/internal/peertest"
	"kerf/kermit"
)

// A C-Kermit receiver whose user cancels the file under way (Ctrl-X at
// its keyboard: an X in its ACKs' data) has a kerf sender stop that
// file, told skipped as canceled, and go on: the next file arrives
// whole. Windowed and stop-and-wait, since each answers the X on its
// own path.
func TestInteropCKermitKeyboardCancelsFile(t *testing.T) {
	for _, tc := range []struct {
		s    setting
		size int
	}{{setting{31, 4096, 3}, 4_000_000}, {setting{1, 94, 1}, 1_000_000}} {
		s := tc.s
		t.Run(s.String(), func(t *testing.T) {
			big := peertest.RandomBytes(tc.size, 61)
			files := []peertest.File{{Name: "big.bin", Data: big}, {Name: "next.bin", Data: peertest.RandomBytes(30_000, 62)}}
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			ck, console := peertest.CKermitWithConsole(t, b, ckSettings(s)+"set transfer interruption on\nset transfer display crt\nreceive", dst)
			cfg := kerfConfig(s, fastBaud)
			var mu sync.Mutex
			ends := map[string]kermit.Event{}
			var once sync.Once
			cfg.Events = func(e kermit.Event) {
				switch {
				case e.Kind == kermit.FileProgress && e.Name == "big.bin" && e.Bytes > 200_000:
					once.Do(func() { console.Write([]byte("x")) }) // C-Kermit's X to cancel file
				case e.Kind == kermit.FileDone || e.Kind == kermit.FileSkipped || e.Kind == kermit.FileFailed:
					mu.Lock()
					ends[e.Name] = e
					mu.Unlock()
				}
			}
			done := runKerf(t, a, fastBaud, cfg, sendKerf(outgoing(src, files)))
			select {
			case err := <-done:
				// The file the receiver canceled is not transferred;
				// nothing else.
				var ge *kermit.GroupError
				if !errors.As(err, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "big.bin" {
					t.Fatalf("kerf send: %v, want big.bin alone not transferred", err)
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("kerf send still running")
			}
			ck.Wait(time.Minute) // (its exit status is its business: a file canceled)
			mu.Lock()
			defer mu.Unlock()
			if e := ends["big.bin"]; e.Kind != kermit.FileSkipped || !errors.Is(e.Err, kermit.ErrCanceled) {
				t.Errorf("big.bin ended %v (%v), want skipped as canceled\n%s", e.Kind, e.Err, ck.Report())
			}
			if e := ends["next.bin"]; e.Kind != kermit.FileDone {
				t.Errorf("next.bin ended %v (%v), want done", e.Kind, e.Err)
			}
			if got, err := os.ReadFile(filepath.Join(dst, "next.bin")); err != nil || !bytes.Equal(got, files[1].Data) {
				t.Errorf("next.bin at C-Kermit: %d bytes, %v; want the %d sent", len(got), err, len(files[1].Data))
			}
			if got, _ := os.ReadFile(filepath.Join(dst, "big.bin")); bytes.Equal(got, big) {
				t.Error("big.bin arrived whole: the cancel was not taken (the test tested nothing)")
			}
		})
	}
}
