package kermit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// closingReader reads a file in small pieces and closes conn, once,
// after after bytes: the link cut off mid-file.
type closingReader struct {
	*os.File
	n, after int64
	conn     net.Conn
	once     *sync.Once
}

func (r *closingReader) Read(p []byte) (int, error) {
	if len(p) > 2048 {
		p = p[:2048]
	}
	if r.n > r.after {
		r.once.Do(func() { time.Sleep(300 * time.Millisecond); r.conn.Close() })
	}
	n, err := r.File.Read(p)
	r.n += int64(n)
	return n, err
}

// A file cut off mid-data is said to be kept for --resume only where a
// partial is kept: a small one received unnamed keeps nothing, and is
// not said to (review: "kept for --resume", and an empty directory).
func TestCutOffSmallFileSaysNothingKept(t *testing.T) {
	for _, unnamedMax := range []int64{0, filestore.NetUnnamedMax} {
		t.Run(fmt.Sprint("unnamedMax=", unnamedMax), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, []testFile{{"s.bin", randomBytes(200<<10, 3)}})
			a, b := link(t, 0, 1)
			var once sync.Once
			p := filepath.Join(src, "s.bin")
			out[0].Open = func() (kermit.FileReader, error) {
				f, err := os.Open(p)
				return &closingReader{File: f, after: 100 << 10, conn: a, once: &once}, err
			}
			store, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			store.UnnamedMax = unnamedMax
			var mu sync.Mutex
			var failed []error
			rcfg := kermit.DefaultConfig()
			rcfg.Events = func(e kermit.Event) {
				if e.Kind == kermit.FileFailed {
					mu.Lock()
					failed = append(failed, e.Err)
					mu.Unlock()
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			recv := kermit.NewSession(b, rcfg)
			send := kermit.NewSession(a, kermit.DefaultConfig())
			rerr := make(chan error, 1)
			go func() { rerr <- recv.Receive(ctx, store) }()
			send.Send(ctx, out)
			a.Close()
			<-rerr
			store.Close()
			ents, _ := os.ReadDir(dst)
			mu.Lock()
			defer mu.Unlock()
			if len(failed) != 1 {
				t.Fatalf("failed events %v, want one for s.bin", failed)
			}
			saysKept := errors.Is(failed[0], kermit.ErrPartialKept)
			if kept := len(ents) == 1; saysKept != kept || kept != (unnamedMax == 0) {
				t.Errorf("said kept %v (%v), %d entries left; want a partial kept and said so only with the temporary name", saysKept, failed[0], len(ents))
			}
		})
	}
}

// readTap keeps what is read through it.
type readTap struct {
	net.Conn
	mu sync.Mutex
	in []byte
}

func (c *readTap) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.in = append(c.in, p[:n]...)
	c.mu.Unlock()
	return n, err
}

func (c *readTap) types() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	types, _ := scanPackets(c.in, 3)
	return types
}

// A receiver stopped while it waits for the last blocks of a file whose
// Z came keeps its partial, and says so (QA ar: "nothing of it is kept;
// --resume sends it again", and --resume went on from it).
func TestStoppedAtZWaitSaysPartialKept(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"big.bin", randomBytes(2<<20, 5)}})
	a, b := link(t, 0, 1)
	tap := &readTap{Conn: b}
	da, db := dualPair(t)
	stall := &stallConn{Conn: db.conn, after: 3 << 19, stalled: make(chan struct{}), closed: make(chan struct{})}
	db.conn = stall
	scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	scfg.Dual, rcfg.Dual = da, db
	scfg.Streaming, rcfg.Streaming = true, true
	var mu sync.Mutex
	var failed []error
	rcfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileFailed {
			mu.Lock()
			failed = append(failed, e.Err)
			mu.Unlock()
		}
	}
	send, recv := kermit.NewSession(a, scfg), kermit.NewSession(tap, rcfg)
	defer send.Close()
	defer recv.Close()
	store, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	rerr := make(chan error, 1)
	go func() { rerr <- recv.Receive(rctx, store) }()
	go send.Send(ctx, out)
	<-stall.stalled
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(tap.types(), "Z"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no Z came (packets %q): the test tested nothing", tap.types())
		}
	}
	time.Sleep(100 * time.Millisecond) // into the wait for the blocks
	stop()
	<-rerr
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 1 || !errors.Is(failed[0], kermit.ErrPartialKept) {
		ents, _ := os.ReadDir(dst)
		t.Fatalf("failed events %v (%T), want big.bin's, saying its partial is kept; %v", failed, failed[0], ents)
	}
	if _, err := os.Stat(filepath.Join(dst, ".big.bin"+filestore.PartSuffix)); err != nil {
		t.Errorf("the partial: %v", err)
	}
}
