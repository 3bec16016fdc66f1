package kermit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// heldAnswers is a receiver's link whose writes, once open is set, wait
// until release is called (or a while passes: then held is set).
type heldAnswers struct {
	net.Conn
	mu      sync.Mutex
	holding bool
	free    chan struct{}
	once    sync.Once
	held    bool // the wait ran out: nothing released it
}

func (c *heldAnswers) hold() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

func (c *heldAnswers) release() { c.once.Do(func() { close(c.free) }) }

func (c *heldAnswers) Write(p []byte) (int, error) {
	c.mu.Lock()
	holding := c.holding
	c.mu.Unlock()
	if holding {
		select {
		case <-c.free:
		case <-time.After(10 * time.Second):
			c.mu.Lock()
			c.held = true
			c.mu.Unlock()
			c.release()
		}
	}
	return c.Conn.Write(p)
}

// inBandPair sends out into store over one session between two kerfs
// on a reliable link without a data channel, streaming, as the control
// layer has it (--in-band), the sender's events to events, resuming if
// resume says so; hold, if set, is given the receiver's link before it
// starts.
func inBandPair(t *testing.T, out []kermit.OutgoingFile, store kermit.Store, events func(kermit.Event), hold func(*heldAnswers), resume bool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	scfg.Events = events
	scfg.Reliable, rcfg.Reliable = true, true
	scfg.Streaming, rcfg.Streaming = true, true // as the control layer has it over TCP
	scfg.Resume = resume
	a, b := link(t, 0, 1)
	h := &heldAnswers{Conn: b, free: make(chan struct{})}
	if hold != nil {
		hold(h)
	}
	send, recv := kermit.NewSession(a, scfg), kermit.NewSession(h, rcfg)
	t.Cleanup(func() { send.Close(); recv.Close() })
	done := make(chan struct{})
	go func() { defer close(done); recv.Receive(ctx, store) }()
	err := send.Send(ctx, out)
	h.release()
	send.Close()
	cancel()
	<-done
	return err
}

// In band to a kerf receiver on a reliable link, small files do not
// wait for the receiver's answers: the next file's packets follow in
// the window, as out of band (QA ap: each file cost two round trips,
// 3,000 files at 50 ms took 85 s). The receiver's answers are held
// until the sender has begun the third file: a sender that waited for
// the first file's A or Z would never get there.
func TestInBandSmallFilesDoNotWaitForAnswers(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprint("resume=", resume), func(t *testing.T) { inBandNoWait(t, resume) })
	}
}

// inBandNoWait is TestInBandSmallFilesDoNotWaitForAnswers, the sender
// resuming or not (resuming, a small file goes whole, "unless there",
// as on the data channel).
func inBandNoWait(t *testing.T, resume bool) {
	var files []testFile
	for i := range 5 {
		files = append(files, testFile{fmt.Sprintf("f%d", i), randomBytes(3000+i, int64(i))})
	}
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, files)
	var h *heldAnswers
	var mu sync.Mutex
	began := 0
	events := func(e kermit.Event) {
		if e.Kind != kermit.FileStart {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch began++; began {
		case 1:
			h.hold() // the S answered: what answers the files waits
		case 3:
			h.release()
		}
	}
	if err := inBandPair(t, out, openStore(t, dst), events, func(held *heldAnswers) { h = held }, resume); err != nil {
		t.Fatalf("send: %v", err)
	}
	if h.held {
		t.Errorf("the sender waited for the receiver's answers to its first files (began %d)", began)
	}
	checkFiles(t, dst, files)
}

// A file the receiver refuses, its data sent already behind its A, is
// dropped there and told refused here; the files around it arrive.
func TestInBandRefusedFileDataDropped(t *testing.T) {
	files := []testFile{{"a", randomBytes(5000, 1)}, {"b", randomBytes(5000, 2)}, {"c", randomBytes(5000, 3)}}
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, files)
	if err := os.Mkdir(filepath.Join(dst, "b"), 0o755); err != nil { // b cannot be stored
		t.Fatal(err)
	}
	var mu sync.Mutex
	ended := map[string]kermit.EventKind{}
	events := func(e kermit.Event) {
		if e.Kind == kermit.FileDone || e.Kind == kermit.FileFailed || e.Kind == kermit.FileSkipped {
			mu.Lock()
			ended[e.Name] = e.Kind
			mu.Unlock()
		}
	}
	err := inBandPair(t, out, openStore(t, dst), events, nil, false)
	var ge *kermit.GroupError
	if !errors.As(err, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "b" {
		t.Fatalf("send: %v, want b failed", err)
	}
	checkFiles(t, dst, []testFile{files[0], files[2]})
	if fi, err := os.Stat(filepath.Join(dst, "b")); err != nil || !fi.IsDir() {
		t.Errorf("b: %v, %v; want the directory left as it was", fi, err)
	}
	if ended["a"] != kermit.FileDone || ended["c"] != kermit.FileDone || ended["b"] == kermit.FileDone {
		t.Errorf("ended %v, want a and c done, b not", ended)
	}
}

// openStore opens dst as a store, closed when t ends.
func openStore(t *testing.T, dst string) *filestore.Dir {
	t.Helper()
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	return dir
}
