package kermit_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// slowCreate is a store slow to begin one file, as a server is that
// waits to take a partial over from a session cut off.
type slowCreate struct {
	*filestore.Dir
	slow  string
	delay time.Duration
}

func (s slowCreate) Create(name string) (kermit.Incoming, error) {
	if name == s.slow {
		time.Sleep(s.delay)
	}
	return s.Dir.Create(name)
}

// syncBuf is a bytes.Buffer for a logger written from several goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A sender waiting long for the receiver's answer on a file (over TCP)
// says so, naming the file, instead of sitting silent (a resumed send
// whose server waits a minute to take a partial over); the others,
// answered at once, say nothing.
func TestSlowVerdictIsSaid(t *testing.T) {
	defer kermit.SetVerdictNoteAfter(100 * time.Millisecond)()
	src, dst := t.TempDir(), t.TempDir()
	out := numberedFiles(src, "f%d", 3, 2<<20) // bigger than eagerResumeSize: each waits for its answer
	var logged syncBuf
	scfg := kermit.DefaultConfig()
	scfg.Resume = true
	scfg.Log = slog.New(slog.NewTextHandler(&logged, nil))
	a, b := link(t, 0, 1)
	rcfg := kermit.DefaultConfig()
	da, db := dualPair(t)
	scfg.Dual, rcfg.Dual = da, db
	scfg.Streaming, rcfg.Streaming = true, true
	scfg.Reliable, rcfg.Reliable = true, true
	send, recv := kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
	t.Cleanup(func() { send.Close(); recv.Close() })
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rerr := make(chan error, 1)
	go func() { rerr <- recv.Receive(ctx, slowCreate{dir, "f1", 500 * time.Millisecond}) }()
	if err := send.Send(ctx, out); err != nil {
		t.Fatal(err)
	}
	if err := <-rerr; err != nil {
		t.Fatal(err)
	}
	log := logged.String()
	if n := strings.Count(log, "still waiting for the receiver's answer"); n != 1 || !strings.Contains(log, "name=f1") {
		t.Errorf("the log says the wait %d times, want once, naming f1:\n%s", n, log)
	}
}
