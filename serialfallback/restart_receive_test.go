package serialfallback_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/internal/peertest"
	"kerf/kermit"
)

// A C-Kermit sender killed mid-file and run again with RESEND, to a kerf
// receiver that waited on: the file is told failed when the new S
// abandons its transfer, and told done again (Again) once the RESEND
// completes it, so that the receive ends well (QA: it ended with exit 4,
// "1 file(s) not received", the file whole).
func TestReceiveRestartedSenderResends(t *testing.T) {
	data := peertest.RandomBytes(600_000, 43)
	root, local := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(local, "big.bin"), data, 0o644)
	watch := filepath.Join(root, filestore.TempName("big.bin"))
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	fsys, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	var mu sync.Mutex
	var evs []kermit.Event
	cfg := kerfConfig(setting{31, 4096, 3}, fastBaud)
	cfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileFailed || e.Kind == kermit.FileDone {
			mu.Lock()
			evs = append(evs, e)
			mu.Unlock()
		}
	}
	done := runKerf(t, a, fastBaud, cfg, func(ctx context.Context, s *kermit.Session) error {
		return s.Receive(ctx, fsys)
	})
	first := peertest.CKermit(t, b, "set window 31\nset block-check 3\ncd "+local+"\nsend big.bin", local)
	deadline := time.Now().Add(time.Minute)
	for {
		if fi, err := os.Stat(watch); err == nil && fi.Size() > 100_000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first transfer never got under way")
		}
		time.Sleep(20 * time.Millisecond)
	}
	first.Wait(0) // killed mid-file
	second := peertest.CKermit(t, b, "set window 31\nset block-check 3\ncd "+local+"\nresend big.bin\nexit 0", local)
	if err := second.Wait(90 * time.Second); err != nil {
		t.Fatalf("the RESEND: %v", err)
	}
	waitKerf(t, done, "receiver")
	if got, err := os.ReadFile(filepath.Join(root, "big.bin")); err != nil || string(got) != string(data) {
		t.Fatalf("big.bin: %d bytes, %v; want the file whole", len(got), err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evs) != 2 || evs[0].Kind != kermit.FileFailed || !errors.Is(evs[0].Err, kermit.ErrPeerRestarted) ||
		evs[1].Kind != kermit.FileDone || !evs[1].Again || evs[1].Offset == 0 {
		t.Errorf("events %+v; want big.bin failed (the sender restarted), then done again from where it was cut", evs)
	}
}
