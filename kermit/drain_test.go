package kermit_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// A server session told to drain goes on with the command under way (a
// GET begun), and with the commands that follow it back to back, and
// ends, telling the client, once it has waited a while for the next:
// Serve returns nil, a clean end.
func TestDrainEndsSessionBetweenCommands(t *testing.T) {
	// (Long enough for the GET's end and the next command to fall within
	// it on a loaded machine: a run beside QA helpers drained between them, the E racing
	// the command, and this test's link, not closed, left it unanswered.)
	defer kermit.SetDrainIdle(time.Second)()
	root, dst := t.TempDir(), t.TempDir()
	data := randomBytes(3<<20, 5)
	if err := os.WriteFile(filepath.Join(root, "a.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	drain := make(chan struct{})
	var once sync.Once
	ccfg, scfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	ccfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileStart {
			once.Do(func() { close(drain) })
		}
	}
	scfg.Drain = drain
	a, b := link(t, 0, 1)
	ccfg.Dual, scfg.Dual = dualPair(t)
	ccfg.Streaming, scfg.Streaming = true, true
	cli, srv := kermit.NewSession(a, ccfg), kermit.NewSession(b, scfg)
	defer cli.Close()
	defer srv.Close()
	dir, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, dir) }()
	store, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := cli.Get(ctx, "a.bin", false, store); err != nil {
		t.Fatalf("the GET under way when the drain began: %v", err)
	}
	select {
	case <-drain:
	default:
		t.Fatal("no drain began: the test tested nothing")
	}
	if got, err := os.ReadFile(filepath.Join(dst, "a.bin")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the copy differs (%v)", err)
	}
	if _, err := cli.Generic(ctx, 'A'); err != nil {
		t.Fatalf("a command right after: %v", err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after the drain: %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("the drained session did not end")
	}
	// Its connection closed then, as a server's is once Serve returns:
	// the client's next command is told why.
	b.Close()
	_, err = cli.Generic(ctx, 'A')
	if err == nil || !strings.Contains(err.Error(), kermit.ShuttingDown) {
		t.Errorf("a command after the session ended: %v, want the server's %q", err, kermit.ShuttingDown)
	}
}
